"""The API's own refusals (`api.*`): each error answer's `errors` entry carries one of these codes
and its parameters beside OpenPAI's `code` and the English `message` (web.api.errors).

Where the words come from another layer that speaks the reader's language itself (Django's password
validators, DRF's parsers and serializers, the usage page's range checks, the OIDC provider's
refusal), the code names the refusal and `said` carries those words as they were said."""

from __future__ import annotations

from catalogue import Text

# ---- the request itself ------------------------------------------------------------------------------
BODY_TOO_LARGE = Text("api.body.too_large", "The request body is larger than %(limit)s bytes.")
BODY_TOO_BIG = Text("api.body.too_big", "The request body is too large.")
NOT_UTF8 = Text("api.body.not_utf8", "The request body is not UTF-8 text at %(where)s.")
BYTE_POSITION = Text("api.body.position", "line %(line)s, column %(column)s (byte %(byte)s)")
CONFIG_NOT_A_FORM = Text(
    "api.body.config_not_a_form",
    "The body is a multipart form: send the job config itself as the body, with Content-Type text/yaml "
    "or application/json (curl: --data-binary @job.yaml -H 'Content-Type: text/yaml', not -F).",
)
NOT_JSON = Text("api.body.not_json", "The body is not valid JSON: %(said)s")
NOT_A_FORM = Text("api.body.not_a_form", "The form body is not valid: %(said)s")
READS_NO_BODY = Text("api.body.reads_none", "This route reads no body (Content-Type %(sent)s).")
SEND_AS = Text("api.body.send_as", "Send the body as %(accepted)s; Content-Type %(sent)s is not read here.")
SEND_AS_ONE_OF = Text(
    "api.body.send_as_one_of", "Send the body as %(accepted)s (or %(others)s); Content-Type %(sent)s is not read here."
)
BODY_LATE = Text("api.body.late", "The request body did not arrive in time.")  # (pai_portal.serving's refusals)
BODY_DEADLINE = Text("api.body.deadline", "The request body did not arrive within %(seconds)s s.")
BODIES_ARRIVING = Text(
    "api.body.arriving", "More than %(most)s request bodies from your address are arriving; try again."
)
NO_CONFIG = Text("api.body.no_config", "The body must hold the job config (YAML or JSON).")
NO_SUCH_API = Text("api.no_such_api", "The requested API or object does not exist.")
NO_SUCH_ROUTE = Text("api.no_such_route", "%(method)s %(path)s is not an API.")
BAD_REQUEST = Text("api.bad_request", "Bad request.")
REFUSED_REQUEST = Text("api.refused_request", "%(said)s")  # Django's SuspiciousOperation, as it says it
BAD_REQUEST_SAID = Text("api.bad_request_said", "Bad request: %(said)s")  # refused before any route
UNREADABLE_REQUEST = Text("api.unreadable_request", "Bad request: The request cannot be read.")
OVER_LIMIT = Text("api.body.over_limit", "The request is too large; the limit is %(limit)s KB.")  # (before any route)
SERVER_FAILED = Text("api.server_failed", "The portal failed on this request; the error is in its log.")
INVALID = Text("api.invalid", "%(said)s")  # DRF's serializers' field errors, as they say them
UNREADABLE = Text("api.unreadable", "%(said)s")  # DRF's parse errors
METHOD_NOT_ALLOWED = Text("api.method_not_allowed", "%(said)s")
NOT_ACCEPTABLE = Text("api.not_acceptable", "%(said)s")
THROTTLED = Text("api.throttled", "Too many requests; retry in %(seconds)s s.")
DATABASE_BUSY = Text("api.database_busy", "The database is busy; please retry.")
INTERNAL = Text("api.internal", "Internal server error.")
FAILED = Text("api.failed", "%(said)s")  # another API exception of DRF's, as it says it

# ---- who asks ----------------------------------------------------------------------------------------
HOW_TO_AUTHENTICATE = Text(
    "api.auth.required",
    "This API needs a token (the portal answers no anonymous reads): get one with "
    'POST /api/v2/authn/basic/login {"username": ..., "password": ...} (or POST /api/v1/token), '
    "or create an application token on the profile page, then send `Authorization: Bearer <token>`.",
)
BEARER_ONLY = Text("api.auth.bearer_only", "Authorization header must be `Bearer <token>`.")
TOKEN_INVALID = Text("api.auth.token_invalid", "The token is not valid.")
TOKEN_REFUSED = Text("api.auth.token_refused", "The token is not valid, expired or revoked.")
AUTHENTICATION_FAILED = Text("api.auth.failed", "%(said)s")  # DRF's session authentication, as it says it
ADMIN_NEEDED = Text(
    "api.auth.admin_needed", "This operation needs an admin, signed in with a login token or the browser session."
)
NO_APPLICATION_TOKEN = Text("api.auth.no_application_token", "Application tokens cannot manage tokens.")
FORBIDDEN = Text("api.auth.forbidden", "%(said)s")  # DRF's other refusals (its CSRF check), as it says them
WRONG_SIGN_IN = Text("api.auth.incorrect", "The user name or the password is incorrect.")
NO_OIDC = Text("api.auth.no_oidc", "This portal does not sign in with OpenID Connect (see GET /api/v1/authn/info).")
OIDC_REDIRECT = Text(
    "api.auth.redirect_uri",
    "redirect_uri: an address on this portal (or one listed in PAI_OIDC_REDIRECT_URIS) is required.",
)
OIDC_FAILED = Text("api.auth.oidc_failed", "%(said)s")  # accounts.oidc.SignInFailed's reason
NO_TOKEN = Text("api.auth.no_token", "No such token.")
APPLICATION_TOKEN_ON_OTHERS = Text(
    "api.auth.application_token_on_others",
    "An application token cannot act on another user's job (%(job)s) or read its SSH key; "
    "use a login token or the browser session.",
)
KEY_LINK_EXPIRED = Text("api.auth.key_link_expired", "The key link is not valid or has expired.")

# ---- jobs --------------------------------------------------------------------------------------------
NO_JOB = Text("api.job.not_found", "Job %(job)s is not found.")
NO_JOB_ROW = Text("api.job.missing", "The job is not found.")
NAME_TAKEN = Text("api.job.name_taken", "The job name is already taken.")
NOT_ALLOWED = Text("api.job.not_allowed", "User %(user)s is not allowed to %(verb)s job %(job)s.")
# ... the verbs of NOT_ALLOWED
STOP_OR_START = Text("api.verb.stop_or_start", "stop or start")
CHANGE_CLASS = Text("api.verb.change_class", "change the priority class of")
ADD_TAG = Text("api.verb.add_tag", "add tag to")
DELETE_TAG = Text("api.verb.delete_tag", "delete tag from")
SUBMIT_AS_OTHER = Text("api.job.submit_as_other", "User %(user)s cannot submit as %(other)s.")
EXECUTION_TYPE = Text("api.job.execution_type", 'Body must be {"value": "STOP"} or {"value": "START"}.')
NO_ATTEMPT = Text("api.job.no_attempt", "Job %(job)s has no attempt %(attempt)s.")
BAD_TAG = Text("api.tag.invalid", "value: %(problem)s.")
NO_TAG = Text("api.tag.not_found", "Tag %(tag)s is not found for job %(job)s.")
NO_TASK_LOG = Text(
    "api.log.no_attempt",
    "No log of attempt %(job_attempt)s/%(task_attempt)s of task %(role)s-%(index)s of job %(job)s.",
)
LOG_LINK_EXPIRED = Text("api.log.link_expired", "The log link is not valid or has expired.")
NO_SWEEP = Text("api.sweep.not_found", "Sweep %(sweep)s is not found.")
NO_TEMPLATE = Text("api.template.not_found", "Template %(template)s is not found.")
NOT_YOUR_TEMPLATE = Text("api.template.not_yours", "Template %(template)s is not yours to delete.")
NOT_YOURS_TO_CHANGE = Text("api.template.not_yours_to_change", "Template %(template)s is not yours to change.")
VC_NOT_AN_OBJECT = Text("api.vc.not_an_object", "Send a JSON object of the VC's fields.")
VC_UNKNOWN_FIELD = Text("api.vc.unknown_field", "%(field)s: not a VC field (one of %(fields)s)")
NO_VC = Text("api.vc.not_found", "Virtual cluster %(vc)s is not found.")
VC_EXISTS = Text("api.vc.exists", "name: virtual cluster %(vc)s exists.")
VC_NAME_STAYS = Text("api.vc.name_stays", "name: a VC's name stays once made (jobs and usage name it)")
NO_APP = Text("api.app.not_found", "App %(app)s is not found.")
NOT_YOUR_APP = Text("api.app.not_yours", "App %(app)s is not yours to share.")
MAX_POINTS = Text("api.metrics.max_points", "maxPoints must be a whole number of at least 2.")

# ---- the job list's query ----------------------------------------------------------------------------
NOT_AN_INTEGER = Text("api.query.not_an_integer", "%(name)s must be an integer.")
NEGATIVE = Text("api.query.negative", "%(name)s must not be negative.")
UNKNOWN_STATES = Text("api.query.unknown_states", "Unknown state(s): %(states)s.")
UNKNOWN_CLASSES = Text("api.query.unknown_classes", "jobPriority: unknown class(es) %(classes)s.")
ORDER_FIELD = Text("api.query.order_field", "order: unknown field '%(field)s' (one of %(fields)s).")
ORDER_DIRECTION = Text("api.query.order_direction", "order: the direction must be ASC or DESC, not '%(direction)s'.")
LIMIT_OVER = Text("api.query.limit", "Limit exceeds max number %(most)s.")
USAGE_RANGE = Text("api.usage.range", "%(said)s", join="; ")  # web.usage.views.usage_range's problems

# ---- users, groups, the cluster ----------------------------------------------------------------------
NO_USER = Text("api.user.not_found", "User %(user)s is not found.")
NO_MEMBER = Text("api.group.no_user", "User %(user)s not found.")
USER_EXISTS = Text("api.user.exists", "User name %(user)s already exists.")
PASSWORD_REFUSED = Text("api.user.password_refused", "%(field)s: %(said)s")  # Django's password validators
USER_REFUSED = Text("api.user.refused", "%(said)s")  # the user model's own checks
OWN_USER_ONLY = Text("api.user.own_only", "data.username: you can only update your own user.")
NO_EXTENSION = Text("api.user.no_extension", "data.extension: the portal keeps no user extension (e.g. sshKeys).")
WRONG_PASSWORD = Text("api.user.wrong_password", "%(field)s: the current password is not correct.")
OTHERS_PASSWORD = Text("api.user.others_password", "User %(user)s cannot change %(other)s's password.")
OTHERS_EMAIL = Text("api.user.others_email", "User %(user)s cannot change %(other)s's email.")
NO_VCS = Text("api.user.no_vcs", "Virtual cluster(s) not found: %(vcs)s.")
FIELD_NO_VCS = Text("api.user.field_no_vcs", "%(field)s: virtual cluster(s) not found: %(vcs)s.")
GROUP_FIELD_REQUIRED = Text("api.group.required", "data.%(field)s: is required unless patch is true")
NO_VC = Text("api.vc.not_found", "Virtual cluster %(vc)s is not found.")
NO_NODE = Text("api.node.not_found", "Node %(node)s is not found.")
NO_STORAGE = Text("api.storage.not_found", "Storage %(storage)s is not found.")
STORAGE_FORBIDDEN = Text("api.storage.forbidden", "User %(user)s is not allowed to access %(storage)s.")
ADMINS_MANAGE_RULES = Text("api.alert.admins_only", "Only admins manage alert rules.")
NO_RULE = Text("api.alert.not_found", "No alert rule %(rule)s.")
