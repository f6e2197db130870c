"""``AIForgeSettings``: configuration from keyword overrides, environment, ``aiforge.yaml`` and defaults.

Precedence, highest first: keyword overrides (``ChatAgent(MODEL="gpt-4o")``), environment
(``AIFORGE_<FIELD>``; provider keys and base URLs also under their standard names such as
``OPENAI_API_KEY``), the YAML file (``aiforge.yaml`` in the working directory, or the path in
``AIFORGE_CONFIG``), then defaults. Unknown names and wrong types raise ``ConfigError`` naming
the setting and where it came from.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, SecretStr, ValidationError
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict, SettingsError

from aiforge.core.config_file import config_path, load_yaml
from aiforge.core.logs import register_secret
from aiforge.core.setting_errors import json_environment_error, suggest, validation_error
from aiforge.core.setting_sources import ENV_PREFIX as ENV_PREFIX
from aiforge.core.setting_sources import STANDARD_ENV, YamlSource, check_environment, env_field, section_field
from aiforge.core.setting_sources import where_to_set as where_to_set
from aiforge.core.types import ConfigError, UsageError

Quality = Literal["high", "medium", "low"]
ServiceTier = Literal["auto", "default", "flex", "priority"]


class ChatSection(BaseModel):
    """The ``chat:`` section of ``aiforge.yaml``."""

    model_config = ConfigDict(extra="forbid")

    system_prompt: str | None = None


def _cache_value(value: Any) -> Any:
    """``AIFORGE_CACHE=true`` / ``0`` arrive as text: read the usual words as booleans, keep anything else a path."""
    if isinstance(value, str) and value.strip().lower() in _BOOLEAN_WORDS:
        return _BOOLEAN_WORDS[value.strip().lower()]
    return os.fspath(value) if isinstance(value, os.PathLike) else value


_BOOLEAN_WORDS = {"true": True, "1": True, "yes": True, "on": True, "false": False, "0": False, "no": False,
                  "off": False, "": False}


class AIForgeSettings(BaseSettings):
    """Resolved aiforge configuration. API keys are ``SecretStr`` and never shown."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        case_sensitive=True,
        extra="forbid",
        validate_default=False,
        populate_by_name=True,
        frozen=True,
    )

    PROVIDER: str = "auto"
    """Provider name: auto, openai, anthropic, internal_gateway, local, scripted, or a registered one."""
    MODEL: str | None = None
    """Model name; None lets the router or the provider's default decide."""
    EMBEDDING_PROVIDER: str | None = None
    """The provider that makes vectors (``embed``, ``dedup``, ``join``, ``cluster``), apart from ``PROVIDER``:
    "sentence-transformers" (in process, the ``[embeddings]`` extra) or a provider that embeds (openai...); None: the
    chat provider's, or sentence-transformers when that is the embedded model and the extra is installed."""
    EMBEDDING_MODEL: str | None = None
    """The model ``embed`` asks for vectors (``df.aiforge.embed``); None: the provider's own default
    (text-embedding-3-small for openai, the served model for a gateway, the bundled weights for local,
    all-MiniLM-L6-v2 for sentence-transformers, which also takes a model folder)."""
    TEMPERATURE: float = Field(default=0.7, ge=0.0, le=2.0)
    """Sampling temperature sent with each request, 0 to 2 (lower is more deterministic)."""
    MAX_TOKENS: int | None = Field(default=None, ge=1)
    """Longest answer a request may generate, in tokens; None leaves it to the provider."""
    TIMEOUT: float = Field(default=60.0, gt=0)
    """Seconds per request before ``APITimeoutError``."""
    MAX_RETRIES: int = Field(default=2, ge=0, le=20)
    """Retries after the first attempt for 408/409/429/5xx and connection errors."""
    RETRY_MAX_WAIT: float = Field(default=30.0, ge=0)
    """Longest wait aiforge honours from ``Retry-After``; a longer hint fails at once."""
    RPM: int | None = Field(default=None, ge=1)
    """Requests per minute to stay under, shared by every agent on the same endpoint and key."""
    TPM: int | None = Field(default=None, ge=1)
    """Tokens per minute (prompt characters / 4 + max_tokens, corrected by usage) to stay under."""
    SERVICE_TIER: ServiceTier | None = None
    """OpenAI's processing tier, sent as ``service_tier`` to Chat Completions (openai, internal_gateway): auto,
    default, flex (half price, slower) or priority; None sends none. Calls are priced at the tier that served them."""
    PROMPT_CACHE: Literal["auto", "off"] = "auto"
    """"auto" marks a request's shared prefix (tools, system prompt) for the provider's prompt cache when it is long
    enough to be cached (Anthropic's ``cache_control``); "off" never marks it."""
    IMAGE_DETAIL: Literal["auto", "low", "high"] = "auto"
    """The ``detail`` of an image sent to OpenAI's Chat Completions (``image_url``): "low" reads it as one 512 px
    tile (85 tokens on gpt-4o), "high" in 512 px tiles after fitting 2048 px and a 768 px short side, "auto" lets the
    model choose. Anthropic has no such setting."""
    LABELS_BY: Literal["auto", "scoring", "generation"] = "auto"
    """How a batch row with a label output (``classify``, ``filter``, a Literal, Enum or bool ``output=``) is answered:
    "scoring" reads each label's likelihood (``Provider.score_labels``), "generation" decodes an answer, "auto"
    scores where the provider ``classifies_by_scoring`` (the embedded model) and the agent has no tools."""
    FILE_INPUT: Literal["auto", "native", "text"] = "auto"
    """How a file column (a PDF or an image in a row) is sent: "auto" as the provider's own block where it reads that
    kind (``Provider.reads_files``: openai, anthropic, the gateway), else a PDF's text extracted locally; "native"
    sends the blocks to any provider with a wire for them (a vision model behind vLLM); "text" extracts PDFs locally
    even for a provider that reads them. An image on the text path is a ``UsageError`` before any request."""
    MODEL_ROUTER_ENABLED: bool = True
    """Let a tier (``quality=``, else DEFAULT_QUALITY) pick the cheapest model of it or better when MODEL is unset."""
    DEFAULT_QUALITY: Quality | None = None
    """The tier (high, medium, low) routed to when a call names none; None: the provider's default model."""

    OPENAI_API_KEY: SecretStr | None = env_field("OPENAI_API_KEY")
    """OpenAI's API key (also read as OPENAI_API_KEY); never shown."""
    OPENAI_BASE_URL: str | None = env_field("OPENAI_BASE_URL")
    """An OpenAI-compatible endpoint instead of api.openai.com (also read as OPENAI_BASE_URL)."""
    ANTHROPIC_API_KEY: SecretStr | None = env_field("ANTHROPIC_API_KEY")
    """Anthropic's API key (also read as ANTHROPIC_API_KEY); never shown."""
    ANTHROPIC_BASE_URL: str | None = env_field("ANTHROPIC_BASE_URL")
    """An Anthropic-compatible endpoint instead of api.anthropic.com (also read as ANTHROPIC_BASE_URL)."""
    GATEWAY_BASE_URL: str | None = None
    """The internal_gateway provider's OpenAI-compatible endpoint."""
    GATEWAY_API_KEY: SecretStr | None = None
    """The internal_gateway provider's key (only AIFORGE_GATEWAY_API_KEY is read); never shown."""
    GATEWAY_MODEL: str | None = None
    """Default model name sent to the gateway when MODEL is not set."""

    LOCAL_MODEL_PATH: str | None = None
    """A GGUF file for the embedded model instead of the bundled SmolLM2 weights."""
    LOCAL_THREADS: int | None = Field(default=None, ge=1)
    """CPU threads for the embedded model; None uses the machine's cores."""
    LOCAL_CONTEXT_SIZE: int = Field(default=4096, ge=256)
    """The embedded model's context window in tokens (prompt and answer together)."""
    OLLAMA_HOST: str | None = env_field("OLLAMA_HOST")
    """Ollama's host (Ollama's own variable); default localhost:11434, its /v1 API is used."""
    LMSTUDIO_BASE_URL: str | None = None
    """LM Studio's server; default http://localhost:1234/v1."""
    VLLM_BASE_URL: str | None = None
    """vLLM's server; default http://localhost:8000/v1."""
    LLAMACPP_BASE_URL: str | None = None
    """llama.cpp's llama-server; default http://localhost:8080/v1."""
    LOCAL_SERVER_API_KEY: SecretStr | None = None
    """Sent to ollama/lmstudio/vllm/llamacpp when set (a server started with --api-key); they need none."""

    PRICES: dict[str, dict[str, float]] = Field(default_factory=dict)
    """Extra or overriding prices: model -> {input, output, cached_input, cache_write} USD per 1M tokens."""
    QUALITY_MODELS: dict[str, dict[str, str]] = Field(default_factory=dict)
    """Router overrides: provider -> {tier: model}."""
    CONTEXT_WINDOW: int | None = Field(default=None, ge=1)
    """Tokens a request may take, prompt and reserved answer (``MAX_TOKENS``) together: what ``agg`` packs rows
    under. None takes the model's published window (``core.context_windows``), the embedded model's
    ``LOCAL_CONTEXT_SIZE``, or 4096 for a model aiforge does not know."""
    CONTEXT_MAX_TOKENS: int = Field(default=1000, ge=50)
    """Token budget of a DataFrame described in a ``%%chat`` message (``{df}``); ``{df:full}`` sends it all."""
    PROGRESS_BAR: bool = True
    """Show a tqdm progress bar in ``run_batch`` (also off when TQDM_DISABLE is set)."""
    CACHE: Annotated[bool | str, BeforeValidator(_cache_value)] = False
    """Response cache: False (off), True (a SQLite file in the user's cache directory), a file path, or "memory"."""
    STORE: Annotated[bool | str, BeforeValidator(_cache_value)] = True
    """Sessions and the turn log: True (a SQLite file in the user's data directory), a path, "memory", False (off)."""
    OTEL: bool = False
    """OpenTelemetry spans of turns, model calls, tools and batches (GenAI semantic conventions), sent to the tracer
    provider the application set up; needs ``pip install "aiforge-kit[otel]"`` (``aiforge.core.otel``)."""
    OTEL_CONTENT: bool | None = None
    """Record message content (prompts, replies, tool arguments and results) on the spans; None follows the standard
    OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT (true, SPAN_ONLY or SPAN_AND_EVENT turn it on)."""
    REPLAY: Literal["record", "replay", "auto"] | None = None
    """Record provider exchanges to REPLAY_FILE, replay them from it, or "auto" (replay when recorded and no key)."""
    REPLAY_FILE: str | None = None
    """The cassette (JSONL) REPLAY reads and writes, e.g. notebooks/cassettes/11_sessions_and_logs.jsonl."""

    chat: ChatSection = section_field("chat", ChatSection)
    """The ``chat:`` section of aiforge.yaml: ``system_prompt``, the default system prompt of every ChatAgent."""

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return init_settings, env_settings, YamlSource(settings_cls)

    def __repr_args__(self) -> Any:
        # Show only what differs from the defaults; SecretStr already masks keys.
        for name, value in super().__repr_args__():
            if name is not None and value != type(self).model_fields[name].get_default(call_default_factory=True):
                yield name, value

    def secret(self, name: str) -> str | None:
        """The plain value of a key field, for handing to an SDK client only."""
        value = getattr(self, name)
        return value.get_secret_value() if value is not None else None

    def secrets(self) -> list[str]:
        """All configured key values, for redaction."""
        return [s for s in (self.secret(n) for n in _SECRET_FIELDS) if s]


_SECRET_FIELDS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GATEWAY_API_KEY", "LOCAL_SERVER_API_KEY")
_JSON_FIELDS = ("PRICES", "QUALITY_MODELS", "chat")
_FIELDS = frozenset(AIForgeSettings.model_fields)


# ---------------------------------------------------------------------------
# Loading with clear errors
# ---------------------------------------------------------------------------


def setting_name(name: str) -> str | None:
    """The setting a keyword names: ``MODEL`` for ``MODEL`` or ``model``; None if it names none."""
    if name in _FIELDS:
        return name
    upper = name.upper()
    return upper if upper in _FIELDS else None


def closest_keyword(name: str, options: Iterable[str] = (), parameters: Iterable[str] = ()) -> str | None:
    """How the keyword closest to ``name`` is written, ``checkpoint=`` (an option or parameter) or ``MODEL=
    (or model=)`` (a setting, in either case); None when nothing is close."""
    shown = {setting.lower(): f"{setting}= (or {setting.lower()}=)" for setting in _FIELDS if setting.isupper()}
    shown.update({name.lower(): f"{name}=" for name in (*parameters, *options)})  # cache= is an option first
    close = difflib.get_close_matches(name.lower(), shown, n=1)
    return shown[close[0]] if close else None


def unknown_keyword(name: str, options: Iterable[str] = (), parameters: Iterable[str] = ()) -> str:
    """The one line for a keyword an operation does not know: neither an option it takes nor a setting.

    >>> unknown_keyword("checkpiont", ["checkpoint", "max_cost"])
    "unknown option or setting 'checkpiont'; did you mean checkpoint=?"
    """
    close = closest_keyword(name, options, parameters)
    if close is not None:
        return f"unknown option or setting {name!r}; did you mean {close}?"
    takes = ", ".join(f"{option}=" for option in options)
    return f"unknown option or setting {name!r}: the options are {takes or 'none'}; settings as provider=, MODEL=..."


def check_overrides(
    overrides: dict[str, Any], parameters: Iterable[str] = (), options: Iterable[str] | None = None
) -> dict[str, Any]:
    """``overrides`` by setting name (``model=`` becomes ``MODEL=``); ``ConfigError`` for an unknown keyword.

    ``parameters`` are the caller's other keyword arguments (``system_prompt``...), offered in the
    did-you-mean of an unknown name alongside the settings. ``options`` (an operation's batch options: the
    caller is an operation, not ``ChatAgent``) makes an unknown name a ``UsageError`` that offers them too
    (``unknown_keyword``).
    """
    resolved: dict[str, Any] = {}
    given_as: dict[str, str] = {}
    for name, value in overrides.items():
        field = setting_name(name)
        if field is None and name in parameters:
            continue
        if field is None and options is not None:
            raise UsageError(unknown_keyword(name, options, parameters))
        if field is None:
            close = closest_keyword(name, (), parameters)
            hint = f" Did you mean {close.split('=')[0]}?" if close else ""
            raise ConfigError(f"unknown setting {name!r} (keyword argument).{hint}")
        if field in resolved:
            raise ConfigError(f"{field} is given twice (as {given_as[field]}= and {name}=); give it once")
        resolved[field] = value
        given_as[field] = name
    return resolved


def load_settings(**overrides: Any) -> AIForgeSettings:
    """Build settings from overrides, environment, ``aiforge.yaml`` and defaults.

    Setting names are accepted in lower case too (``model="gpt-4o"``). Raises ``ConfigError`` for an
    unknown setting (a misspelt ``AIFORGE_*`` environment variable included), a wrong type or an
    unreadable file.
    """
    path = config_path()
    yaml_config = load_yaml(path) if path else None
    overrides = check_overrides(overrides)
    check_environment(_FIELDS)
    if yaml_config is not None:
        for name, value in yaml_config.values.items():
            if name not in _FIELDS:
                line = yaml_config.lines.get(name)
                raise ConfigError(f"unknown setting {name!r} in {yaml_config.path}:{line}.{suggest(name, _FIELDS)}")
            if name == "chat" and not isinstance(value, dict | None):
                raise ConfigError(f"{yaml_config.path}:{yaml_config.lines.get(name)}: 'chat' must be a mapping")
    try:
        settings = AIForgeSettings(**overrides)
    except SettingsError:
        raise json_environment_error(_JSON_FIELDS, ENV_PREFIX) from None
    except ValidationError as exc:
        fields = AIForgeSettings.model_fields
        raise validation_error(
            exc, fields, overrides, yaml_config, prefix=ENV_PREFIX, standard_env=STANDARD_ENV
        ) from None
    for secret in settings.secrets():
        register_secret(secret)
    return settings
