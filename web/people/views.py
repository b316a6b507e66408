"""The People pages, for admins: find a user and change their email, admin flag, groups, VCs or
disable them; register users in batch from CSV (OpenPAI webportal's columns); groups with what
they grant; and the audit list of every such change. Views are thin: accounts.user_admin and
accounts.groups do the work."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.db import transaction
from django.db.models import Q
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_http_methods

from accounts import groups as group_actions
from accounts.models import AuditEntry
from accounts.permissions import is_admin
from clusters import grants, user_admin
from clusters.models import StorageConfig, VirtualCluster
from web.texts import translated

PAGE = 50
CSV_LIMIT = 1024 * 1024


def _admin_only(request: HttpRequest) -> None:
    if not is_admin(request.user):
        raise PermissionDenied(_("The People pages are for cluster admins."))


def _user(username: str) -> Any:
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise Http404("No such user.")
    return user


@require_http_methods(["GET"])
def user_list(request: HttpRequest) -> HttpResponse:
    _admin_only(request)
    query = request.GET.get("q", "").strip()[:150]
    users = get_user_model().objects.order_by("username").prefetch_related("groups").select_related("account")
    if query:
        users = users.filter(
            Q(username__icontains=query) | Q(email__icontains=query) | Q(groups__name__icontains=query)
        )
    page = Paginator(users.distinct(), PAGE).get_page(request.GET.get("page"))
    vcs = list(VirtualCluster.objects.prefetch_related("allowed_users", "allowed_groups"))
    rows = [{"user": user, "vcs": [vc.name for vc in vcs if vc.is_open_to(user)]} for user in page]
    return render(request, "people/users.html", {"rows": rows, "page": page, "query": query})


class UserForm(forms.Form):
    email = forms.EmailField(required=False, label=_("Email"))
    admin = forms.BooleanField(required=False, label=_("Admin (by hand; an admin group makes admins too)"))
    active = forms.BooleanField(required=False, label=_("May sign in (unticked: disabled, tokens revoked)"))
    groups = forms.ModelMultipleChoiceField(
        Group.objects.order_by("name"), required=False, widget=forms.CheckboxSelectMultiple, label=_("Groups")
    )
    own_vcs = forms.ModelMultipleChoiceField(
        VirtualCluster.objects.none(), required=False, widget=forms.CheckboxSelectMultiple, label=_("VCs of their own")
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        restricted = [vc.pk for vc in user_admin.restricted_vcs()]
        self.fields["own_vcs"].queryset = VirtualCluster.objects.filter(pk__in=restricted)  # type: ignore[attr-defined]


@require_http_methods(["GET", "POST"])
def user_edit(request: HttpRequest, username: str) -> HttpResponse:
    _admin_only(request)
    user = _user(username)
    account = group_actions.account_of(user)
    initial = {
        "email": user.email,
        "admin": account.admin_by_hand,
        "active": user.is_active,
        "groups": list(user.groups.all()),
        "own_vcs": list(user.virtual_clusters.all()),
    }
    form = UserForm(request.POST if request.method == "POST" else None, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            user_admin.update_user(
                request.user,
                user,
                email=form.cleaned_data["email"],
                admin=form.cleaned_data["admin"],
                active=form.cleaned_data["active"],
                groups=form.cleaned_data["groups"],
                own_vcs=form.cleaned_data["own_vcs"],
            )
        except ValidationError as error:
            for field, messages in error.message_dict.items():
                for message in messages:
                    form.add_error(field, message)
        else:
            return HttpResponseRedirect(reverse("people:user", args=[user.get_username()]) + "?saved=1")
    vcs = VirtualCluster.objects.prefetch_related("allowed_users", "allowed_groups")
    context = {
        "person": user,
        "account": account,
        "form": form,
        "vcs": [vc.name for vc in vcs if vc.is_open_to(user)],
        "saved": request.GET.get("saved") == "1",
        "history": AuditEntry.objects.filter(target=user.get_username())[:20],
    }
    return render(request, "people/user.html", context, status=400 if form.errors else 200)


@require_http_methods(["GET", "POST"])
def user_import(request: HttpRequest) -> HttpResponse:
    _admin_only(request)
    text, result = "", None
    if request.method == "POST":
        upload = request.FILES.get("file")
        if upload is not None:
            text = upload.read(CSV_LIMIT + 1).decode("utf-8-sig", errors="replace")
        else:
            text = request.POST.get("text", "")
        if len(text) > CSV_LIMIT:
            result = user_admin.CsvImport(errors=[(1, "", str(_("the file is larger than 1 MB")))])
        else:
            result = user_admin.import_users_csv(request.user, text)
    status = 400 if result is not None and result.errors else 200
    # The file's passwords are not shown back: a refused import lists rows and columns, not values.
    return render(request, "people/import.html", {"result": result}, status=status)


@require_http_methods(["GET"])
def csv_template(request: HttpRequest) -> HttpResponse:
    _admin_only(request)
    response = HttpResponse("\ufeff" + user_admin.CSV_TEMPLATE, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="userinfo.csv"'
    return response


class GroupForm(forms.Form):
    name = forms.RegexField(
        group_actions.GROUP_NAME,
        max_length=150,
        label=_("Name"),
        error_messages={"invalid": _("letters, digits and _ only")},
    )
    description = forms.CharField(max_length=512, required=False, label=_("Description"))
    external_name = forms.CharField(
        max_length=512, required=False, label=_("Name in the directory (LDAP or OIDC group)")
    )
    admin = forms.BooleanField(required=False, label=_("Its members are admins"))
    vcs = forms.ModelMultipleChoiceField(
        VirtualCluster.objects.order_by("name"), required=False, widget=forms.CheckboxSelectMultiple, label=_("VCs")
    )
    storages = forms.ModelMultipleChoiceField(
        StorageConfig.objects.order_by("name"), required=False, widget=forms.CheckboxSelectMultiple, label=_("Storages")
    )


@require_http_methods(["GET", "POST"])
def group_list(request: HttpRequest) -> HttpResponse:
    _admin_only(request)
    form = GroupForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            grants.create_group(
                request.user,
                data["name"],
                description=data["description"],
                external_name=data["external_name"],
                admin=data["admin"],
                vcs=[vc.name for vc in data["vcs"]],
                storages=[config.name for config in data["storages"]],
            )
        except group_actions.GroupProblem as problem:
            form.add_error("name", translated(problem.message))
        else:
            return HttpResponseRedirect(reverse("people:groups"))
    groups = Group.objects.order_by("name").select_related("info").prefetch_related("user_set")
    rows = [{"group": group, "row": grants.group_row(group), "members": group.user_set.count()} for group in groups]
    return render(request, "people/groups.html", {"rows": rows, "form": form}, status=400 if form.errors else 200)


def _group(name: str) -> Group:
    try:
        return group_actions.find_group(name)
    except group_actions.GroupProblem as problem:
        raise Http404(translated(problem.message)) from problem


@require_http_methods(["GET", "POST"])
def group_edit(request: HttpRequest, groupname: str) -> HttpResponse:
    _admin_only(request)
    group = _group(groupname)
    info = group_actions.info_of(group)
    initial = {
        "name": group.name,
        "description": info.description,
        "external_name": info.external_name,
        "admin": info.admin,
        "vcs": list(group.virtual_clusters.all()),
        "storages": list(group.storage_configs.all()),
    }
    data = request.POST.copy() if request.method == "POST" else None
    if data is not None:
        data["name"] = group.name  # renaming would break the directory's mapping: not offered
    form = GroupForm(data, initial=initial)
    if request.method == "POST" and form.is_valid():
        cleaned = form.cleaned_data
        try:
            with transaction.atomic():
                group_actions.update_group(
                    request.user,
                    group,
                    description=cleaned["description"],
                    external_name=cleaned["external_name"],
                    admin=cleaned["admin"],
                )
                grants.set_grants(
                    request.user,
                    group,
                    [vc.name for vc in cleaned["vcs"]],
                    [config.name for config in cleaned["storages"]],
                )
        except group_actions.GroupProblem as problem:
            form.add_error("vcs" if problem.field == grants.VC_FIELD else "storages", translated(problem.message))
        else:
            return HttpResponseRedirect(reverse("people:group", args=[group.name]) + "?saved=1")
    context = {
        "group": group,
        "info": info,
        "form": form,
        "members": group.user_set.order_by("username"),
        "saved": request.GET.get("saved") == "1",
    }
    return render(request, "people/group.html", context, status=400 if form.errors else 200)


@require_http_methods(["GET", "POST"])
def group_delete(request: HttpRequest, groupname: str) -> HttpResponse:
    _admin_only(request)
    group = _group(groupname)
    problem = ""
    if request.method == "POST":
        try:
            grants.delete_group(request.user, group)
        except group_actions.GroupProblem as refused:
            problem = translated(refused.message)
        else:
            return HttpResponseRedirect(reverse("people:groups"))
    context = {"group": group, "members": group.user_set.count(), "problem": problem}
    return render(request, "people/group_delete.html", context, status=409 if problem else 200)


@require_http_methods(["GET"])
def audit_list(request: HttpRequest) -> HttpResponse:
    _admin_only(request)
    query = request.GET.get("q", "").strip()[:150]
    entries = AuditEntry.objects.all()
    if query:
        entries = entries.filter(
            Q(target__icontains=query) | Q(actor_name__icontains=query) | Q(action__icontains=query)
        )
    page = Paginator(entries, PAGE).get_page(request.GET.get("page"))
    return render(request, "people/audit.html", {"page": page, "query": query})
