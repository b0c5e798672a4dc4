"""Settings from ``MEMLAB_*`` environment variables and keyword arguments."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from memlab.errors import ConfigError


def default_cache_dir() -> Path:
    return Path.home() / ".cache" / "memlab"


class Settings(BaseSettings):
    """Everything memlab reads from the environment; keyword arguments override it.

    Backends default to embedded implementations; setting a URL switches the role to a server.
    API keys are never fields here: providers read them from the environment at call time, so
    they cannot leak into a manifest.
    """

    model_config = SettingsConfigDict(env_prefix="MEMLAB_", extra="forbid")

    llm: str = Field("local", description="LLM provider: a key of memlab.llm.LLMS (memlab llms)")
    llm_model: str | None = Field(None, description="provider model name (gemini/openai)")
    local_size: Literal["0.5b", "1.5b", "135m"] = Field(
        "1.5b", description="packaged GGUF tier of the answering model")
    memory_llm: str | None = Field(
        None, description="provider of the memory's own calls (default: the answering one)")
    memory_llm_model: str | None = Field(
        None, description="model of the memory's own calls: a local tier or GGUF path, or a "
        "provider model name (default: 0.5b for local, else the answering model)")
    local_model: Path | None = Field(None, description="path to any GGUF file (overrides size)")
    n_ctx: int = Field(4096, ge=512, description="local model context window in tokens")
    n_threads: int | None = Field(None, ge=1, description="local model CPU threads")
    prefix_cache_mb: int = Field(
        2048, ge=0, description="evaluated prompt prefixes a local model keeps while other "
        "prompts run on it, in MiB (memlab.llm.prefix; 0: keep only the live one)")
    kv_checkpoint_mb: int = Field(
        4096, ge=0, description="disk a local model's long prompt reads may keep under "
        "cache_dir/kv, in MiB, so a resumed run does not read them again (memlab.llm.checkpoint; "
        "0: none)")
    openai_base_url: str | None = None
    embedder: str = Field("minilm", description="embedder: a key of EMBEDDERS (memlab embedders)")
    redis_url: str | None = None
    chroma_url: str | None = None
    sql_url: str | None = None
    dask_scheduler: str | None = None
    cache_dir: Path = Field(default_factory=default_cache_dir)
    llm_cache: bool = Field(True, description="serve repeated model calls from the cache")
    results_dir: Path = Path("results")
    locomo_data: Path | None = Field(
        None, description="LoCoMo's locomo10.json for the locomo grid (default: "
                          "../shared/data/locomo/locomo10.json when present)")
    locomo_labels: Path | None = Field(
        None, description="hand labels of LoCoMo answers the paper's judges table measures "
                          "the judges against (default: data/locomo_labels.jsonl when present)")
    locomo_heldout_labels: Path | None = Field(
        None, description="hand labels of LoCoMo answers drawn after the judge's rule was last "
                          "revised, measured in a table of their own (default: "
                          "data/locomo_heldout_labels.jsonl when present)")
    require_services: bool = False
    request_timeout_s: float = Field(
        60.0, gt=0, description="deadline of one attempt of a remote model call, in seconds")
    max_retries: int = Field(4, ge=0)
    call_budget_s: float = Field(
        180.0, gt=0, description="overall deadline of one model call across all its retries")
    store_timeout_s: float = Field(
        5.0, gt=0, description="deadline of one call to a store server (Redis, chroma)")
    max_failed_share: float = Field(
        0.0, ge=0, le=1, description="share of a run's answering calls that may fail before "
                                     "the run ends as failed (0: any failed answer fails it)")
    decision_cr_repair: bool = Field(
        True, description="decision debate: when the Director's CR stays above cr_threshold "
                          "after cr_max_retries, repair its matrix (recorded) instead of stopping")
    api_token: SecretStr | None = Field(
        None, description="bearer token the agent server requires (needed beyond loopback)")
    server_deadline_s: float = Field(
        300.0, gt=0, description="agent server: a request not answered within it gets 504 and "
                                 "stores nothing")
    server_read_timeout_s: float = Field(
        30.0, gt=0, description="agent server: deadline for receiving a request's body")
    server_max_body_bytes: int = Field(
        10 * 1024 * 1024, ge=1024, description="agent server: larger bodies get 413")

    @field_validator("api_token")
    @classmethod
    def _blank_token_is_none(cls, value: SecretStr | None) -> SecretStr | None:
        """``MEMLAB_API_TOKEN=""`` means no token (never a token everyone knows)."""
        return value if value is not None and value.get_secret_value().strip() else None


def get_settings(**overrides) -> Settings:
    """Read settings from the environment, with keyword arguments taking precedence.

    Raises:
        ConfigError: a value does not fit its field; the message names the variable
            (``MEMLAB_N_CTX``) or keyword, the value and the rule.
    """
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        raise ConfigError(settings_message(exc, overrides)) from None


def settings_message(exc: ValidationError, overrides: dict) -> str:
    """One line naming each bad setting as the user wrote it (variable or keyword)."""
    parts = []
    for error in exc.errors():
        field = str(error["loc"][0]) if error.get("loc") else "settings"
        where = (f"keyword {field}" if field in overrides
                 else f"environment variable MEMLAB_{field.upper()}")
        value = error.get("input")
        shown = f"={value!r}" if isinstance(value, str | int | float) else ""
        parts.append(f"{where}{shown}: {error['msg']}")
    return "; ".join(parts)
