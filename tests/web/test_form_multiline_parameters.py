"""A parameter the form's `name=value` lines cannot show as it is (line breaks, spaces at either
end) is shown JSON-quoted and comes back unchanged (found by the generated-config round trip)."""

from web.submit_form import config_to_form, form_to_config


def config(value: str) -> dict:
    return {
        "protocolVersion": 2,
        "name": "p",
        "type": "job",
        "prerequisites": [{"name": "img", "type": "dockerimage", "uri": "ubuntu"}],
        "parameters": {"A": value},
        "taskRoles": {
            "w": {
                "instances": 1,
                "dockerImage": "img",
                "resourcePerInstance": {"cpu": 1, "memoryMB": 100, "gpu": 0},
                "commands": ["true"],
            }
        },
    }


def test_it_shows_a_multi_line_parameter_quoted_and_keeps_it():
    form = config_to_form(config("first\nsecond"))
    assert form.job["parameters"] == 'A="first\\nsecond"'
    assert form_to_config(form)["parameters"] == {"A": "first\nsecond"}


def test_it_keeps_a_parameter_of_only_a_form_feed():
    assert form_to_config(config_to_form(config("\x0c")))["parameters"] == {"A": "\x0c"}
