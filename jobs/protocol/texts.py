"""What the protocol says about a config: every code of a config error, its English template beside
it (catalogue.Text). A producer makes the Message (`MIN(value=100)`); the API answers its code,
parameters and English, the pages render it in the reader's language (web.texts).

Codes are `config.<what>`; the words a message is made of (a type's name, what a name may contain,
a YAML or JSON parser's problem) are messages too, translated where they are put in. Quoted names
keep their quotes in the template, the name alone is the parameter."""

from __future__ import annotations

from collections.abc import Sequence

from catalogue import Message, Text

# --- reading the text: size, encoding, syntax --------------------------------------------------

NOT_UTF8_CHARACTER = Text("config.not_utf8_character", "the config is not UTF-8 text (character %(position)s)")
NOT_UTF8_BYTE = Text("config.not_utf8_byte", "the config is not UTF-8 text (byte %(position)s)")
TOO_BIG = Text("config.too_big", "the config is %(size)s MB; the limit is %(limit)s MB")
EMPTY = Text("config.empty", "the config is empty")
TOO_DEEP = Text("config.too_deep", "the config is nested deeper than %(levels)s levels")
NUMBER_TOO_LONG = Text("config.number_too_long", "a number in the config is too long: %(detail)s")
NOT_A_MAPPING = Text(
    "config.not_a_mapping", "the config must be a mapping (a JSON object or YAML mapping) at the top level"
)
TOO_MANY_VALUES = Text("config.too_many_values", "the config holds more than %(count)s values (YAML aliases?)")
EXPANDS_TOO_BIG = Text("config.expands_too_big", "the config expands to more than %(mb)s MB (YAML aliases?)")
NESTED_TOO_DEEP = Text("config.nested_too_deep", "nested deeper than %(levels)s levels")
KEY_NOT_TEXT = Text("config.key_not_text", "keys must be text; YAML reads this one as %(type)s: quote it")
LONE_SURROGATE = Text(
    "config.lone_surrogate", "holds a lone UTF-16 surrogate (\\ud800-\\udfff escape): not valid Unicode text"
)
INTEGER_TOO_BIG = Text("config.integer_too_big", "must be at most %(most)s in size")
NOT_FINITE = Text("config.not_finite", "must be a finite number")
UNSUPPORTED_VALUE = Text("config.unsupported_value", "unsupported value of type %(type)s")

JSON_SYNTAX = Text("config.json_syntax", "JSON syntax error at line %(line)s, column %(column)s: %(problem)s")
JSON_DUPLICATE_KEY = Text("config.json_duplicate_key", "JSON error: duplicate key '%(key)s'")
YAML_ERROR = Text("config.yaml_error", "YAML error: %(detail)s")
YAML_SYNTAX = Text("config.yaml_syntax", "YAML syntax error at line %(line)s, column %(column)s: %(problem)s")
YAML_SYNTAX_IN = Text(
    "config.yaml_syntax_in",
    "YAML syntax error at line %(line)s, column %(column)s: %(problem)s "
    "(%(context)s at line %(at_line)s, column %(at_column)s)",
)
YAML_SYNTAX_NOTICED = Text(
    "config.yaml_syntax_noticed",
    "YAML syntax error at line %(line)s, column %(column)s: %(problem)s %(context)s "
    "(noticed at line %(at_line)s, column %(at_column)s)",
)
# The portal's own problems, raised through the YAML parser's errors (jobs.protocol.parsing).
YAML_UNSUPPORTED_TAG = Text("config.yaml.unsupported_tag", "unsupported YAML tag %(tag)s")
YAML_KEY_NOT_SCALAR = Text("config.yaml.key_not_scalar", "a mapping key must be a scalar")
YAML_DUPLICATE_KEY = Text("config.yaml.duplicate_key", "duplicate key '%(key)s'")
YAML_MERGE_NOT_MAPPING = Text("config.yaml.merge_not_mapping", "<< must merge a mapping")
YAML_INVALID = Text("config.yaml.invalid", "invalid YAML")

# What libyaml (and PyYAML, where the portal runs without libyaml) say: the problem and where it was
# parsing. A phrase not listed stays as the parser said it.
YAML_WORDS = {
    text.template: text
    for text in (
        Text("config.yaml.expected_comma_or_bracket", "did not find expected ',' or ']'"),
        Text("config.yaml.expected_comma_or_brace", "did not find expected ',' or '}'"),
        Text("config.yaml.expected_key", "did not find expected key"),
        Text("config.yaml.expected_dash", "did not find expected '-' indicator"),
        Text("config.yaml.expected_node_content", "did not find expected node content"),
        Text("config.yaml.expected_colon", "could not find expected ':'"),
        Text("config.yaml.mapping_values_in_context", "mapping values are not allowed in this context"),
        Text("config.yaml.mapping_values_here", "mapping values are not allowed here"),
        Text("config.yaml.block_sequence_in_context", "block sequence entries are not allowed in this context"),
        Text("config.yaml.tab_violates_indentation", "found a tab character that violates indentation"),
        Text("config.yaml.tab_for_indentation", "found a tab character where an indentation space is expected"),
        Text("config.yaml.cannot_start_token", "found character that cannot start any token"),
        Text("config.yaml.unexpected_end", "found unexpected end of stream"),
        Text("config.yaml.unknown_escape", "found unknown escape character"),
        Text("config.yaml.undefined_alias", "found undefined alias"),
        Text("config.yaml.undefined_tag_handle", "found undefined tag handle"),
        Text("config.yaml.duplicate_anchor", "found duplicate anchor; first occurrence"),
        Text("config.yaml.second_occurrence", "second occurrence"),
        Text("config.yaml.expected_alphanumeric", "did not find expected alphabetic or numeric character"),
        Text("config.yaml.expected_line_break", "did not find expected comment or line break"),
        Text("config.yaml.expected_document_start", "did not find expected <document start>"),
        Text("config.yaml.another_document", "but found another document"),
        Text("config.yaml.single_document", "expected a single document in the stream"),
        Text("config.yaml.while_flow_sequence", "while parsing a flow sequence"),
        Text("config.yaml.while_flow_mapping", "while parsing a flow mapping"),
        Text("config.yaml.while_block_mapping", "while parsing a block mapping"),
        Text("config.yaml.while_block_collection", "while parsing a block collection"),
        Text("config.yaml.while_block_node", "while parsing a block node"),
        Text("config.yaml.while_flow_node", "while parsing a flow node"),
        Text("config.yaml.while_node", "while parsing a node"),
        Text("config.yaml.while_simple_key", "while scanning a simple key"),
        Text("config.yaml.while_plain_scalar", "while scanning a plain scalar"),
        Text("config.yaml.while_quoted_scalar", "while scanning a quoted scalar"),
        Text("config.yaml.while_block_scalar", "while scanning a block scalar"),
        Text("config.yaml.while_anchor", "while scanning an anchor"),
        Text("config.yaml.while_alias", "while scanning an alias"),
        Text("config.yaml.while_tag", "while scanning a tag"),
        Text("config.yaml.while_next_token", "while scanning for the next token"),
        Text("config.yaml.while_quoted_scalar_parsing", "while parsing a quoted scalar"),
    )
}
# What Python's json module says (JSONDecodeError.msg; trailing commas never reach it: they are removed).
JSON_WORDS = {
    text.template: text
    for text in (
        Text("config.json.expecting_value", "Expecting value"),
        Text("config.json.expecting_comma", "Expecting ',' delimiter"),
        Text("config.json.expecting_colon", "Expecting ':' delimiter"),
        Text("config.json.expecting_property_name", "Expecting property name enclosed in double quotes"),
        Text("config.json.extra_data", "Extra data"),
        Text("config.json.invalid_control_character", "Invalid control character at"),
        Text("config.json.unterminated_string", "Unterminated string starting at"),
    )
}


def parser_words(said: str, words: dict[str, Text]) -> Message | str:
    """A parser's phrase as a message when it is one the portal translates, else as it was said."""
    text = words.get(said)
    return text() if text is not None else said


# --- the schema ---------------------------------------------------------------------------------

REQUIRED = Text("config.required", "is required")
UNKNOWN_KEY = Text("config.unknown_key", "unknown key '%(key)s'")
UNKNOWN_KEY_CLOSE = Text("config.unknown_key_close", "unknown key '%(key)s' (did you mean '%(close)s'?)")
MUST_BE = Text("config.type", "must be %(types)s")
EITHER = Text("config.either", "%(one)s or %(other)s")
TYPE_NAMES = {
    "integer": Text("config.type.integer", "an integer"),
    "number": Text("config.type.number", "a number"),
    "string": Text("config.type.string", "a string"),
    "boolean": Text("config.type.boolean", "a boolean (true or false)"),
    "object": Text("config.type.mapping", "a mapping"),
    "array": Text("config.type.list", "a list"),
    "null": Text("config.type.null", "null"),
}
MIN = Text("config.min", "must be >= %(value)s")
MAX = Text("config.max", "must be <= %(value)s")
ONE_OF = Text("config.one_of", "must be one of: %(options)s")
BLANK = Text("config.blank", "must not be blank")
EMPTY_VALUE = Text("config.empty_value", "must not be empty")
MIN_LENGTH = Text(
    "config.min_length",
    "must be at least %(value)s character",
    plural="must be at least %(value)s characters",
    count="value",
)
MAX_LENGTH = Text(
    "config.max_length",
    "must be at most %(value)s character",
    plural="must be at most %(value)s characters",
    count="value",
)
MIN_ITEMS = Text("config.min_items", "must have at least %(value)s entries")
MAY_CONTAIN = Text("config.may_contain", "may contain only %(words)s")
NAME_MAY_CONTAIN = Text("config.name_may_contain", "name may contain only %(words)s")
MUST_MATCH = Text("config.must_match", "must match %(pattern)s")
NAME_MUST_MATCH = Text("config.name_must_match", "name must match %(pattern)s")
SCHEMA_SAYS = Text("config.schema", "%(detail)s")  # a rule the portal has no words of its own for
# What a name pattern of the schemas allows, in words: a raw regex means little to most users.
ALLOWED_WORDS = {
    r"^[A-Za-z0-9\-._~]+$": Text("config.allowed.name_tilde_dash", "letters, digits and - . _ ~"),
    r"^[A-Za-z0-9\-._]+$": Text("config.allowed.name_dash", "letters, digits and - . _"),
    r"^[A-Za-z0-9._~]+$": Text("config.allowed.name_tilde", "letters, digits and . _ ~"),
    r"^[a-zA-Z0-9_-]+$": Text("config.allowed.label", "letters, digits, _ and -"),
    r"^[a-zA-Z_][a-zA-Z0-9_]*$": Text("config.allowed.identifier", "letters, digits and _, not starting with a digit"),
}


def must_be(kinds: Sequence[str]) -> Message:
    """`must be an integer or null`: the schema's type names, the last ones joined by "or"."""
    names: list[Message | str] = [TYPE_NAMES[kind]() if kind in TYPE_NAMES else kind for kind in kinds]
    types = names[-1]
    for name in reversed(names[:-1]):
        types = EITHER(one=name, other=types)
    return MUST_BE(types=types)


# --- references between the parts of a v2 config -----------------------------------------------

DUPLICATE_PREREQUISITE = Text("config.duplicate_prerequisite", "duplicate %(kind)s prerequisite '%(name)s'")
NO_PREREQUISITE = Text("config.no_prerequisite", "no prerequisite named '%(name)s'")
NO_KIND_PREREQUISITE = Text(
    "config.no_kind_prerequisite", "no %(kind)s prerequisite named '%(name)s' (known: %(known)s)"
)
NO_KIND_PREREQUISITE_NONE = Text(
    "config.no_kind_prerequisite_none", "no %(kind)s prerequisite named '%(name)s' (known: none defined)"
)
REQUIRES_ITSELF = Text("config.requires_itself", "'%(name)s' requires itself (a cycle)")
COUNT_THRESHOLD = Text("config.count_threshold", "must be -1, null or >= 1")
AT_MOST_INSTANCES = Text("config.at_most_instances", "must be <= instances (%(value)s)")
SHM_OVER_MEMORY = Text("config.shm_over_memory", "must be <= resourcePerInstance.memoryMB (%(value)s)")
DUPLICATE_DEPLOYMENT = Text("config.duplicate_deployment", "duplicate deployment '%(name)s'")
NO_ROLE = Text("config.no_role", "no task role named '%(name)s'")
NO_ROLE_KNOWN = Text("config.no_role_known", "no task role named '%(name)s' (known: %(known)s)")
NO_DEPLOYMENT = Text("config.no_deployment", "no deployment named '%(name)s' (known: %(known)s)")
NO_DEPLOYMENT_NONE = Text("config.no_deployment_none", "no deployment named '%(name)s' (known: none)")
SECRET_EMPTY = Text("config.secret_empty", "secret '%(name)s' has no value: type it (secret values are never copied)")
SECRET_MASKED = Text("config.secret_masked", "secret '%(name)s' is ******, a masked value: type the real one")
PASSWORD_MASKED = Text("config.password_masked", "the password is ******, a masked value: type the real one")

# --- v1 -----------------------------------------------------------------------------------------

DUPLICATE_ROLE = Text("config.duplicate_role", "duplicate task role name '%(name)s'")
SHM_OVER_MEMORY_V1 = Text("config.shm_over_memory_v1", "must be <= memoryMB (%(value)s)")
AT_MOST_TASK_NUMBER = Text("config.at_most_task_number", "must be <= taskNumber (%(value)s)")
DUPLICATE_PORT_LABEL = Text("config.duplicate_port_label", "duplicate port label '%(label)s'")
PORTS_PAST_65535 = Text("config.ports_past_65535", "ports must end at or below 65535")
V1_TEMPLATE_SYNTAX = Text(
    "config.v1_template_syntax",
    "contains OpenPAI v2 template syntax (%(syntax)s), which v1 configs cannot use: "
    "remove it, or submit a v2 config with parameters",
)

# --- templating: <% $parameters.x %> and friends ------------------------------------------------

TOO_MUCH_EXPANSION = Text("config.ref.too_much", "references expand the config past %(mb)s MB")
PARAMETER_REFERENCES = Text(
    "config.ref.parameter_not_secret", "a parameter value may reference $secrets only, not $%(namespace)s"
)
SECRET_FORM = Text("config.ref.secret_form", "a secret is referenced as %(form)s")
PARAMETER_FORM = Text("config.ref.parameter_form", "a parameter is referenced as %(form)s")
FIELD_FORM = Text("config.ref.field_form", "a %(namespace)s field is referenced as %(form)s")
UNDEFINED_SECRET = Text("config.ref.undefined_secret", "undefined secret '%(name)s' (not in secrets)")
UNDEFINED_PARAMETER = Text("config.ref.undefined_parameter", "undefined parameter '%(name)s' (not in parameters)")
UNDEFINED_PARAMETER_ITEM = Text(
    "config.ref.undefined_parameter_item", "undefined parameter '%(name)s' (no such item in parameters)"
)
UNDEFINED_FIELD = Text(
    "config.ref.undefined_field", "undefined %(namespace)s field '%(name)s' (not in prerequisite '%(prerequisite)s')"
)
UNDEFINED_FIELD_ITEM = Text(
    "config.ref.undefined_field_item",
    "undefined %(namespace)s field '%(name)s' (no such item in prerequisite '%(prerequisite)s')",
)
ROLE_ONLY = Text(
    "config.ref.role_only",
    "$%(namespace)s is only available in a task role's commands, deployments, runtime plugins and prerequisite "
    "callbacks",
)
NO_ROLE_PREREQUISITE = Text(
    "config.ref.no_prerequisite", "$%(namespace)s is used but the task role names no %(namespace)s prerequisite"
)
UNKNOWN_REFERENCE = Text(
    "config.ref.unknown", "unknown reference $%(namespace)s (use $parameters, $secrets, $script, $data or $output)"
)
IN_ROLE = Text("config.ref.in_role", "%(message)s (in task role '%(role)s')")

# --- what the portal honours, and refuses rather than ignore ------------------------------------

CLASS_CONTRADICTS = Text("config.class_contradicts", "contradicts %(field)s ('%(value)s'); name the class once")
SKU_GPUS = Text(
    "config.sku_gpus",
    "asks for %(sku)s GPU but resourcePerInstance.gpu is %(gpus)s; set them alike",
    plural="asks for %(sku)s GPUs but resourcePerInstance.gpu is %(gpus)s; set them alike",
    count="sku",
)
ONE_GPU_TYPE = Text("config.one_gpu_type", "the portal runs a job on one GPU type; the task roles ask for %(types)s")
GPU_TYPE_CONTRADICTS = Text("config.gpu_type_contradicts", "'%(wanted)s' contradicts skuType '%(sku)s'")
PREREQUISITE_PLUGIN = Text("config.prerequisite_plugin", "plugin '%(name)s' is not supported (only the cmd plugin)")
RUNTIME_PLUGIN = Text("config.runtime_plugin", "plugin '%(name)s' is not supported (supported: %(supported)s)")
TENSORBOARD_LOGDIR = Text("config.tensorboard_logdir", "must name at least one directory, e.g. {train: /pai/work/logs}")
HIVED_OPTION = Text("config.hived_option", "is a HiveD scheduler option the portal cannot honour")
HIVED_ROLE_OPTION = Text("config.hived_role_option", "is a HiveD option the portal cannot honour")

# --- interactive apps ---------------------------------------------------------------------------

JUPYTER_INTERFACE = Text("config.jupyter_interface", "must be lab or notebook")
IDLE_MINUTES = Text("config.idle_minutes", "must be a number of minutes above 0, at most %(most)s")
USER_LIST = Text("config.user_list", "must be a list of user names")
HTTP_PORT_NAME = Text("config.http_port_name", "must name one of the task role's ports, e.g. port: web")
HTTP_PORT_UNKNOWN = Text(
    "config.http_port_unknown", "task role '%(role)s' declares no port '%(label)s' (resourcePerInstance.ports)"
)
HTTP_PORT_SSH = Text("config.http_port_ssh", "sshd speaks no HTTP: name another port")

# --- limits, time limit, priority, grace --------------------------------------------------------

TOO_MANY_ROLES = Text("config.too_many_roles", "%(count)s task roles; a job may have at most %(most)s")
TOO_MANY_TASKS = Text(
    "config.too_many_tasks", "%(count)s tasks in this job; a job may have at most %(most)s tasks in all its roles"
)
SHM_CAP = Text("config.shm_cap", "must be at most %(cap)s (the portal's PAI_MAX_SHM_MB)")
TIME_LIMIT_TYPE = Text("config.time_limit_type", "must be a number of minutes, not %(value)s")
TIME_LIMIT_POSITIVE = Text("config.time_limit_positive", "must be more than 0 minutes, not %(value)s")
TIME_LIMIT_MAX = Text("config.time_limit_max", "must be at most %(most)s minutes (ten years), not %(value)s")
TIME_LIMIT_VC = Text(
    "config.time_limit_vc", "asks for %(asked)s; its virtual cluster allows at most %(most)s", join=" "
)
HOURS = Text("time.hours", "%(count)s h")
MINUTES = Text("time.minutes", "%(count)s min")
SECONDS = Text("time.seconds", "%(count)s s")
CLASS_UNKNOWN = Text("config.class_unknown", "unknown priority class '%(name)s' (one of %(options)s)")
CLASS_ABOVE = Text(
    "config.class_above", "'%(name)s' is above the highest class virtual cluster \"%(vc)s\" allows ('%(max)s')"
)
CLASS_CRIT = Text("config.class_crit", 'only admins and the users virtual cluster "%(vc)s" names may use class "crit"')
GRACE_TYPE = Text("config.grace_type", "must be a whole number of seconds, 0 or more")
GRACE_CAP = Text("config.grace_cap", "must be at most %(cap)s (the portal's PAI_MAX_GRACE_SECONDS)")

# --- storages a job asks for --------------------------------------------------------------------

STORAGE_NAMES = Text("config.storage_names", "must be a list of storage names")
STORAGE_NAME = Text("config.storage_name", "must be a storage name")
STORAGE_LIST = Text("config.storage_list", "must be a list of {name, mountPath}")
MOUNT_PATH = Text("config.mount_path", "must be an absolute path other than /")
STORAGE_TWICE = Text("config.storage_twice", "storage '%(name)s' is named twice")

# --- images -------------------------------------------------------------------------------------

IMAGE_INVALID = Text("config.image.invalid", "'%(image)s' is not a valid image reference: %(why)s")
IMAGE_AND = Text("config.image.and", "%(first)s; and it %(then)s")
IMAGE_EMPTY = Text("config.image.empty", "is empty")
IMAGE_SPACE = Text("config.image.space", "has a space in it; an image reference has none (e.g. %(example)s)")
IMAGE_DIGEST = Text(
    "config.image.digest", "has an invalid digest after @ (it is algorithm:hex, e.g. sha256: and 64 hex digits)"
)
IMAGE_TAG = Text(
    "config.image.tag",
    "has an invalid tag '%(tag)s': a tag is up to 128 letters, digits, _ . and -, not starting with . or -",
)
IMAGE_NAME_TOO_LONG = Text("config.image.name_too_long", "has a name longer than %(most)s characters")
IMAGE_REGISTRY_HOST = Text("config.image.registry_host", "has an invalid registry host '%(host)s'")
IMAGE_CAPITALS = Text(
    "config.image.capitals",
    "starts with '%(first)s', which Docker would read as a registry's host name because it has capitals; "
    "repository names are lowercase (e.g. %(example)s)",
)
IMAGE_LOWERCASE = Text("config.image.lowercase", "must be lowercase in its repository name (%(lower)s, not %(given)s)")
IMAGE_PATH_PART = Text(
    "config.image.path_part",
    "has an invalid repository name part '%(part)s': lowercase letters and digits, separated by . _ __ or -",
)
REGISTRY_REFUSED = Text(
    "config.registry_refused",
    "registry %(registry)s is %(reason)s; the node's engine may not pull from there unless an admin allows this "
    "registry (%(setting)s)",
)
PULL_REFUSED = Text("config.pull_refused", "pulling image %(image)s refused: %(refusal)s")
# Where a registry (or a webhook's URL) points inside the portal's network (jobs.protocol.addresses).
ADDRESS_KINDS = {
    "loopback": Text("address.loopback", "a loopback address"),
    "link_local": Text("address.link_local", "a link-local address"),
    "private": Text("address.private", "a private address"),
    "multicast": Text("address.multicast", "a multicast address"),
    "reserved": Text("address.reserved", "a reserved address"),
    "shared": Text("address.shared", "a shared address"),
    "site_local": Text("address.site_local", "a site-local address"),
    "special": Text("address.special", "a special-purpose address"),
}
PORTAL_OWN = Text("address.portal_own", "this portal's own address (its host names and nodes)")
UNRESOLVED = Text("address.unresolved", "a host name that does not resolve")
NAME_FOR = Text("address.name_for", "a name for %(kind)s (%(address)s)")
NAME_FOR_PORTAL = Text("address.name_for_portal", "a name for %(kind)s")

# --- sweeps -------------------------------------------------------------------------------------

SWEEP_MAPPING = Text("config.sweep.mapping", "must be a mapping with one of grid, random, array, search")
SWEEP_UNKNOWN_KEY = Text("config.sweep.unknown_key", "unknown key (known: %(known)s, maxConcurrent)")
SWEEP_ONE_KIND = Text("config.sweep.one_kind", "must have exactly one of %(kinds)s (has %(count)s)")
SWEEP_POSITIVE = Text("config.sweep.positive", "must be an integer >= 1")
SWEEP_RUNS = Text("config.sweep.runs", "%(count)s runs, at most %(most)s")
SWEEP_AT_LEAST_RUNS = Text("config.sweep.at_least_runs", "at least %(count)s runs, at most %(most)s")
SWEEP_BYTES = Text(
    "config.sweep.bytes",
    "%(count)s runs of up to %(each)s each make %(total)s in all, at most %(most)s MB "
    "(fewer runs, or a shorter config)",
)
SWEEP_GRID = Text("config.sweep.grid", "must be a mapping of parameter -> list of values")
SWEEP_VALUES = Text("config.sweep.values", "must be a non-empty list of values")
SWEEP_RANDOM = Text("config.sweep.random", "must be a mapping with samples and parameters")
SWEEP_RANGES = Text("config.sweep.ranges", "must be a mapping of parameter -> range")
SWEEP_SEED = Text("config.sweep.seed", "must be an integer or a string")
SWEEP_CHOICE = Text("config.sweep.choice", "must be a non-empty list")
SWEEP_RANGE = Text("config.sweep.range", "must be {min, max} (numbers; log, integer optional) or {choice: [...]}")
SWEEP_MAX_BELOW_MIN = Text("config.sweep.max_below_min", "must be >= min (%(min)s)")
SWEEP_NO_INTEGER = Text("config.sweep.no_integer", "has no integer between min (%(min)s) and max (%(max)s)")
SWEEP_LOG_MIN = Text("config.sweep.log_min", "must be > 0 for a log range")
SWEEP_ARRAY_ITEM = Text(
    "config.sweep.array_item", '"%(item)s" is not an index, a range (0-9) or a stepped range (0-15:4)'
)
SWEEP_ARRAY_UP = Text("config.sweep.array_up", '"%(item)s": a range goes up, by a step >= 1')
SWEEP_ARRAY_INDEX = Text("config.sweep.array_index", '"%(item)s": an index is at most %(most)s')
KB = Text("size.kb", "%(size)s KB")
MB = Text("size.mb", "%(size)s MB")

# --- exit diagnostics: how a task or a job ended, what the user reads (jobs.protocol.exitspec) ---
# The whole is a message: "<phrase>: <why>" (EXITED), the log's line after it where a pattern
# matched one (LOG_SAYS), "<role>-<index>: ..." where it is a failed job's (TASK); the phrase, the
# log's line and an engine's own words (SAID) are never translated, the exit spec's reason by its
# exact text (the pages' EXIT_SPEC_TEXTS).

EXITED = Text("exit.exited", "%(phrase)s: %(said)s")
LOG_SAYS = Text("exit.log_says", "%(said)s; the log says: %(line)s")
TASK = Text("exit.task", "%(task)s: %(diagnostics)s")
SPEC_REASON = Text("exit.spec_reason", "%(spec_reason)s")
COMMAND_EXITED = Text("exit.command_exited", "%(reason)s (the command exited with code %(code)s)")
NO_EXIT_CODE = Text("exit.no_exit_code", "The task ended without an exit code")
SAID = Text("exit.said", "%(said)s")
NEVER_MET = {
    "afterok": Text(
        "exit.dependency.afterok",
        "its dependency can never be met: job %(job)s ended %(state)s (afterok needs it to succeed)",
    ),
    "afternotok": Text(
        "exit.dependency.afternotok",
        "its dependency can never be met: job %(job)s ended %(state)s (afternotok needs it to fail or be stopped)",
    ),
}
SEARCH_MAPPING = Text(
    "config.search.mapping", "must be a mapping with algorithm, metric, trials and parameters (goal, pruner optional)"
)
SEARCH_UNKNOWN_KEY = Text("config.search.unknown_key", "unknown key (known: %(known)s)")
SEARCH_METRIC = Text("config.search.metric", "must name the metric the runs report (as in PAI_METRIC lines)")
SEARCH_GRID_VALUES = Text("config.search.grid_values", "a grid search takes a list of values or {choice: [...]}")
SEARCH_GRID_TRIALS = Text("config.search.grid_trials", "must be <= %(points)s, the points of the grid")
SEARCH_CHOICE_SCALAR = Text("config.search.choice_scalar", "each choice must be a string, a number, a boolean or null")
SEARCH_PRUNER = Text("config.search.pruner", "must be a mapping with kind (asha or median)")
