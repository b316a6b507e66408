"""A new password ends the sessions Django knows of (session auth hash) and, here, the user's login
tokens too: whoever had the old password may have minted one. Application tokens stay: the user
made them on purpose and revokes them on the profile page."""

from typing import Any

from django.contrib.auth import get_user_model
from django.db.models.signals import pre_save
from django.dispatch import receiver

from accounts.models import Token


@receiver(pre_save, sender=get_user_model(), dispatch_uid="accounts.revoke_login_tokens_on_new_password")
def revoke_login_tokens_on_new_password(sender: Any, instance: Any, update_fields: Any = None, **kwargs: Any) -> None:
    if instance.pk is None or (update_fields is not None and "password" not in update_fields):
        return
    old = sender.objects.filter(pk=instance.pk).values_list("password", flat=True).first()
    if old is not None and old != instance.password:
        Token.objects.filter(user_id=instance.pk, kind=Token.Kind.LOGIN).delete()
