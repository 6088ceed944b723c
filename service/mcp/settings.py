"""The MCP server's settings: environment variables named as mcp-automem's, so configs carry over.

    AUTOMEM_API_URL              the Engram service (default http://127.0.0.1:8001, `make run`'s address);
                                 AUTOMEM_ENDPOINT, its name before mcp-automem 0.15, when unset
    AUTOMEM_API_KEY              its API token; AUTOMEM_API_TOKEN (the service's own variable) when unset;
                                 else the token file of a local install (ENGRAM_TOKEN_FILE, default
                                 ~/.config/engram/token, which `make run` / `engram serve` write)
    AUTOMEM_RECALL_TOKEN_BUDGET  recall_memory's response budget in estimated tokens (default 18,000)
    ENGRAM_MCP_TOKEN             `--http` only: a bearer token of the MCP server's own (callers may also
                                 send a token the service accepts; without either, 401)
"""

from __future__ import annotations

from functools import cached_property

from pydantic_settings import BaseSettings, SettingsConfigDict

from service.auth.local_token import read_token
from service.mcp.budget import resolve_token_budget
from service.paths import token_file

DEFAULT_ENDPOINT = "http://127.0.0.1:8001"


class McpSettings(BaseSettings):
    model_config = SettingsConfigDict(case_sensitive=False, extra="ignore", env_file=None)

    automem_api_url: str | None = None
    automem_endpoint: str | None = None
    automem_api_key: str | None = None
    automem_api_token: str | None = None
    # Kept as text and parsed like mcp-automem does: anything but a positive whole number is the default.
    automem_recall_token_budget: str | None = None
    engram_mcp_token: str | None = None

    @property
    def endpoint(self) -> str:
        for value in (self.automem_api_url, self.automem_endpoint):  # the new name first
            if value and value.strip():
                return value.strip().rstrip("/")
        return DEFAULT_ENDPOINT

    @property
    def api_key(self) -> str | None:
        return self.api_key_source[0]

    @cached_property
    def api_key_source(self) -> tuple[str | None, str]:
        """The token and where it came from (for the start-up log line; the token is never logged)."""
        for name, value in (("AUTOMEM_API_KEY", self.automem_api_key), ("AUTOMEM_API_TOKEN", self.automem_api_token)):
            if value and value.strip():
                return value.strip(), name
        path = token_file()
        return read_token(path), f"the token file {path}"

    @property
    def mcp_token(self) -> str | None:
        return (self.engram_mcp_token or "").strip() or None

    @property
    def token_budget(self) -> int:
        return resolve_token_budget(self.automem_recall_token_budget)

    @property
    def budget_warning(self) -> str | None:
        """Why a given AUTOMEM_RECALL_TOKEN_BUDGET is not used, if it is not."""
        raw = (self.automem_recall_token_budget or "").strip()
        if raw and not (raw.isdigit() and int(raw) > 0):
            return f"AUTOMEM_RECALL_TOKEN_BUDGET={raw!r} is not a positive whole number: using {self.token_budget}"
        return None
