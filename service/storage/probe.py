"""Start-up checks whose failure is one line naming the setting, the value tried and what is wrong.

Settings are validated in service/config.py (`load_settings`); this module checks the engine once,
before anything else touches it (and before the embedding model loads), so an unreachable or wrong
OPENSEARCH_URL fails the start in ~1 ms with a line that names the URL, instead of a traceback from
the first index call.
"""

from __future__ import annotations

import re

from opensearchpy import OpenSearch
from opensearchpy import exceptions as os_exc

from service.config import shown_url
from service.observability.oplog import engine_log_muted


class StartupError(RuntimeError):
    """The service cannot start; `str()` is one line fit for stderr."""


_ERRNO = re.compile(r"\[Errno -?\d+\] ([^)'\"]+)")
_SSL = re.compile(r"\[SSL: [A-Z_]+\] ([^(']+)")


def connection_reason(exc: Exception) -> str:
    """`connection refused`, `name or service not known`, `TLS: wrong version number`, ... out of the
    client's nested exception text."""
    text = f"{exc} {getattr(exc, 'info', '')}"
    if isinstance(exc, os_exc.ConnectionTimeout):
        return "no answer in time (OPENSEARCH_TIMEOUT)"
    if (m := _SSL.search(text)) or isinstance(exc, os_exc.SSLError):
        return f"TLS failed: {m.group(1).strip().lower()}" if m else "TLS failed"
    if m := _ERRNO.search(text):
        return m.group(1).strip().lower()
    return type(exc).__name__


def probe_engine(client: OpenSearch, url: str, *, setting: str | None = "OPENSEARCH_URL") -> None:
    """GET / once. Unreachable, refusing our credentials, or not OpenSearch at all: StartupError.
    `setting` names where the URL came from (None: the local node the service started)."""
    where = f"{setting}={shown_url(url)!r}" if setting else f"the local node at {url}"
    with engine_log_muted():  # the client's own warning (with its traceback) would add lines
        try:
            info = client.info()
        except os_exc.AuthenticationException:
            raise StartupError(f"{where}: OpenSearch refused the credentials (401); check OPENSEARCH_USER and OPENSEARCH_PASSWORD") from None
        except os_exc.AuthorizationException:
            return  # a user that may not read GET / can still own its indices: the bootstrap will tell
        except os_exc.ConnectionError as exc:  # ConnectionTimeout and SSLError included
            raise StartupError(f"{where}: OpenSearch is unreachable ({connection_reason(exc)})") from None
        except os_exc.SerializationError:
            raise StartupError(f"{where}: the answer to GET / is not OpenSearch's; is the URL right?") from None
        except os_exc.TransportError as exc:
            raise StartupError(f"{where}: answered {exc.status_code} to GET /; is it an OpenSearch node?") from None
        except os_exc.OpenSearchException as exc:
            raise StartupError(f"{where}: the engine client failed ({type(exc).__name__}: {exc})") from None
    if not isinstance(info, dict) or "version" not in info:
        raise StartupError(f"{where}: the answer to GET / is not OpenSearch's; is the URL right?")
