"""AIForgeSettings: precedence, YAML, validation errors, secrets."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from aiforge.core.settings import AIForgeSettings, load_settings
from aiforge.core.types import ConfigError


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "AIFORGE_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    for name in list(__import__("os").environ):
        if name.startswith("AIFORGE_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write_yaml(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_when_nothing_is_configured() -> None:
    s = load_settings()
    assert (s.PROVIDER, s.MODEL, s.TEMPERATURE, s.MODEL_ROUTER_ENABLED) == ("auto", None, 0.7, True)


def test_keyword_override_beats_environment_and_yaml(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    write_yaml(tmp_path / "aiforge.yaml", "MODEL: from-yaml\nTEMPERATURE: 0.1\n")
    monkeypatch.setenv("AIFORGE_MODEL", "from-env")
    s = load_settings(MODEL="from-kwargs")
    assert s.MODEL == "from-kwargs"
    assert s.TEMPERATURE == 0.1


def test_environment_beats_yaml(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    write_yaml(tmp_path / "aiforge.yaml", "MODEL: from-yaml\n")
    monkeypatch.setenv("AIFORGE_MODEL", "from-env")
    assert load_settings().MODEL == "from-env"


def test_yaml_beats_defaults(tmp_path: Path) -> None:
    write_yaml(tmp_path / "aiforge.yaml", 'PROVIDER: "openai"\nMODEL: "gpt-4o-mini"\nTEMPERATURE: 0.7\n')
    s = load_settings()
    assert (s.PROVIDER, s.MODEL) == ("openai", "gpt-4o-mini")


def test_aiforge_config_env_points_at_another_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    other = write_yaml(tmp_path / "elsewhere.yaml", "MAX_RETRIES: 7\n")
    monkeypatch.setenv("AIFORGE_CONFIG", str(other))
    assert load_settings().MAX_RETRIES == 7


def test_aiforge_config_pointing_nowhere_is_a_config_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("AIFORGE_CONFIG", str(tmp_path / "missing.yaml"))
    with pytest.raises(ConfigError, match="AIFORGE_CONFIG"):
        load_settings()


def test_standard_key_names_are_read_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-SECRET")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    s = load_settings()
    assert s.secret("OPENAI_API_KEY") == "sk-test-SECRET"
    assert s.ANTHROPIC_BASE_URL == "http://127.0.0.1:9"


def test_prefixed_environment_name_also_works_for_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIFORGE_ANTHROPIC_API_KEY", "sk-ant-test")
    assert load_settings().secret("ANTHROPIC_API_KEY") == "sk-ant-test"


def test_chat_section_holds_the_module_system_prompt(tmp_path: Path) -> None:
    write_yaml(tmp_path / "aiforge.yaml", "chat:\n  system_prompt: Be terse.\n")
    assert load_settings().chat.system_prompt == "Be terse."


def test_typo_in_keyword_is_a_config_error_with_suggestion() -> None:
    with pytest.raises(ConfigError, match=r"MODLE.*Did you mean MODEL\?"):
        load_settings(MODLE="gpt-4o")


def test_unknown_yaml_key_names_file_and_line(tmp_path: Path) -> None:
    write_yaml(tmp_path / "aiforge.yaml", "MODEL: x\n\nTEMPRATURE: 0.2\n")
    with pytest.raises(ConfigError, match=r"TEMPRATURE.*aiforge\.yaml:3.*TEMPERATURE"):
        load_settings()


def test_wrong_type_in_yaml_names_field_and_line(tmp_path: Path) -> None:
    write_yaml(tmp_path / "aiforge.yaml", "MODEL: x\nTEMPERATURE: hot\n")
    with pytest.raises(ConfigError, match=r"TEMPERATURE.*aiforge\.yaml:2"):
        load_settings()


def test_wrong_type_in_environment_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIFORGE_MAX_RETRIES", "many")
    with pytest.raises(ConfigError, match="AIFORGE_MAX_RETRIES"):
        load_settings()


def test_out_of_range_keyword_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="TEMPERATURE"):
        load_settings(TEMPERATURE=5)


def test_unparseable_yaml_names_the_line(tmp_path: Path) -> None:
    write_yaml(tmp_path / "aiforge.yaml", "MODEL: x\nTEMPERATURE: [0.1\n")
    with pytest.raises(ConfigError, match=r"invalid YAML in .*aiforge\.yaml:\d"):
        load_settings()


def test_yaml_that_is_not_a_mapping_is_rejected(tmp_path: Path) -> None:
    write_yaml(tmp_path / "aiforge.yaml", "- a\n- b\n")
    with pytest.raises(ConfigError, match="mapping"):
        load_settings()


def test_config_error_is_also_a_value_error() -> None:
    with pytest.raises(ValueError):
        load_settings(NOPE=1)


def test_keys_never_appear_in_repr_str_or_errors(caplog: pytest.LogCaptureFixture) -> None:
    s = load_settings(OPENAI_API_KEY="sk-test-SECRET", GATEWAY_API_KEY="gw-SECRET")
    caplog.set_level(logging.DEBUG)
    logging.getLogger("aiforge").debug("settings: %r %s", s, s)
    for text in (repr(s), str(s), s.model_dump_json(), caplog.text):
        assert "SECRET" not in text
    with pytest.raises(ConfigError) as info:
        load_settings(OPENAI_API_KEY=12345678901234567890, MAX_RETRIES="sk-test-SECRET")
    assert "SECRET" not in str(info.value)


def test_repr_shows_only_changed_settings() -> None:
    assert repr(load_settings(MODEL="gpt-4o")) == "AIForgeSettings(MODEL='gpt-4o')"


def test_settings_are_immutable() -> None:
    s = load_settings()
    with pytest.raises(Exception):  # noqa: B017 - pydantic's frozen error type is an implementation detail
        s.MODEL = "x"  # type: ignore[misc]
    assert isinstance(s, AIForgeSettings)


def test_edited_yaml_file_is_reread(tmp_path: Path) -> None:
    path = write_yaml(tmp_path / "aiforge.yaml", "MODEL: first\n")
    assert load_settings().MODEL == "first"
    write_yaml(path, "MODEL: second-model\n")
    assert load_settings().MODEL == "second-model"


# --- misspelt environment variables, lower-case keywords, nested YAML keys ---


def test_a_misspelt_environment_variable_names_the_nearest_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIFORGE_MODLE", "gpt-4o")
    with pytest.raises(ConfigError, match="AIFORGE_MODLE is not a setting; did you mean AIFORGE_MODEL\\?"):
        load_settings()


def test_a_lower_case_environment_variable_is_named_with_the_upper_case_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIFORGE_temperature", "0.1")
    with pytest.raises(ConfigError, match="did you mean AIFORGE_TEMPERATURE\\? \\(names are upper-case\\)"):
        load_settings()


def test_unrelated_aiforge_variables_are_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIFORGE_RESEARCH_BASE_URL", "http://127.0.0.1:1")  # the research tool's own variable
    monkeypatch.setenv("AIFORGE_REQUIRE_BROWSER", "1")  # not close to any setting
    assert load_settings().PROVIDER == "auto"


def test_lower_case_keywords_name_settings() -> None:
    s = load_settings(model="gpt-4o", temperature=0.2, max_tokens=10)
    assert (s.MODEL, s.TEMPERATURE, s.MAX_TOKENS) == ("gpt-4o", 0.2, 10)


def test_a_setting_given_in_both_cases_is_an_error() -> None:
    with pytest.raises(ConfigError, match="MODEL is given twice \\(as MODEL= and model=\\)"):
        load_settings(MODEL="a", model="b")


def test_an_invalid_keyword_value_carries_the_setting_and_the_problem() -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(temperature=5)
    assert (info.value.setting, info.value.problem) == ("TEMPERATURE", "Input should be less than or equal to 2")


def test_unknown_key_in_the_chat_section_names_file_line_and_the_key(tmp_path: Path) -> None:
    write_yaml(tmp_path / "aiforge.yaml", "MODEL: x\nchat:\n  sytem_prompt: hi\n")
    expected = r"chat\.sytem_prompt' in .*aiforge\.yaml:3\. Did you mean chat\.system_prompt"
    with pytest.raises(ConfigError, match=expected):
        load_settings()


def test_a_service_tier_that_is_not_one_of_openais_names_the_variable_and_the_choices(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AIFORGE_SERVICE_TIER", "cheap")
    with pytest.raises(ConfigError) as info:
        load_settings()
    message = str(info.value)
    assert "SERVICE_TIER" in message and "environment variable AIFORGE_SERVICE_TIER" in message
    assert "'auto', 'default', 'flex' or 'priority'" in message


def test_service_tier_is_unset_and_prompt_caching_automatic_by_default() -> None:
    settings = load_settings()
    assert (settings.SERVICE_TIER, settings.PROMPT_CACHE) == (None, "auto")
    with pytest.raises(ConfigError, match="PROMPT_CACHE"):
        load_settings(PROMPT_CACHE="sometimes")


@pytest.mark.parametrize("variable", ["AIFORGE_CHAT", "AIFORGE_chat"])
def test_the_chat_section_is_read_from_its_upper_case_variable(monkeypatch: pytest.MonkeyPatch, variable: str) -> None:
    monkeypatch.setenv(variable, '{"system_prompt": "hi"}')
    assert load_settings().chat.system_prompt == "hi"


def test_a_misspelt_section_variable_names_the_upper_case_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIFORGE_CAHT", '{"system_prompt": "hi"}')
    with pytest.raises(ConfigError, match="AIFORGE_CAHT is not a setting; did you mean AIFORGE_CHAT\\?"):
        load_settings()


def test_the_chat_section_still_comes_from_yaml_and_keywords(tmp_path: Path) -> None:
    write_yaml(tmp_path / "aiforge.yaml", "chat:\n  system_prompt: from yaml\n")
    assert load_settings().chat.system_prompt == "from yaml"
    assert load_settings(chat={"system_prompt": "kw"}).chat.system_prompt == "kw"


def test_a_bad_chat_section_in_the_environment_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIFORGE_CHAT", '{"sytem_prompt": "hi"}')
    with pytest.raises(ConfigError, match="unknown setting 'chat.sytem_prompt'.*Did you mean chat.system_prompt"):
        load_settings()
    monkeypatch.setenv("AIFORGE_CHAT", "not json")
    with pytest.raises(ConfigError, match="invalid value in environment variable AIFORGE_CHAT: "):
        load_settings()
