"""QueryModel: the base of every query-string model (`Annotated[Model, Query()]` in a route).

FastAPI hands such a model every query parameter (extras included, since `extra="allow"`); the
`before` validator folds AutoMem clients' habits onto the declared fields:
- aliases (`order_by` -> `sort`) and PHP-style list spellings (`tags[]`); a field's own name wins;
- lists repeated or comma-separated (`tags=a,b&tags=c`); vectors as `0.1,0.2` or `[0.1, 0.2]`;
- empty values mean "not given"; choices are case-insensitive.
Unknown parameters are accepted (clients send extras) and named by `warnings`.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, PrivateAttr, model_validator

from service.memory.tags import split_list_param

# Read by the auth and bank layers, never a model's business.
AUTH_PARAMETERS = frozenset({"api_key", "bank"})


def list_aliases(*names: str) -> dict[str, str]:
    return {f"{name}[]": name for name in names}


class QueryModel(BaseModel):
    model_config = ConfigDict(extra="allow", allow_inf_nan=False)

    aliases: ClassVar[dict[str, str]] = {}
    list_fields: ClassVar[tuple[str, ...]] = ()  # repeated and comma-separated
    plain_list_fields: ClassVar[tuple[str, ...]] = ()  # repeated only (values may hold commas)
    vector_fields: ClassVar[tuple[str, ...]] = ()
    choice_fields: ClassVar[tuple[str, ...]] = ()
    read_elsewhere: ClassVar[tuple[str, ...]] = ()  # parameters another dependency reads (Signet's `scope`): not unknown

    _unknown: list[str] = PrivateAttr(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _fold(cls, raw: Any) -> Any:
        if not isinstance(raw, dict):
            return raw
        lists = set(cls.list_fields) | set(cls.plain_list_fields) | set(cls.vector_fields)
        out: dict[str, Any] = {}
        # Own names first, so `sort` wins over `order_by` whatever their order in the URL.
        for key in sorted(raw, key=lambda k: k in cls.aliases):
            name = cls.aliases.get(key, key)
            values = raw[key] if isinstance(raw[key], list) else [raw[key]]
            values = [v for v in values if not (isinstance(v, str) and not v.strip())]
            if not values:
                continue
            if name in lists:
                out[name] = [*out.get(name, []), *values]
            elif name not in out:
                out[name] = values[0] if len(values) == 1 else values
        for name in cls.list_fields:
            if name in out:
                out[name] = split_list_param([str(v) for v in out[name]])
        for name in cls.plain_list_fields:
            if name in out:
                out[name] = [str(v).strip() for v in out[name] if str(v).strip()]
        for name in cls.vector_fields:
            if name in out:
                out[name] = [p for v in out[name] for p in map(str.strip, str(v).replace("[", "").replace("]", "").split(",")) if p]
        for name in cls.choice_fields:
            if isinstance(out.get(name), str):
                out[name] = out[name].strip().lower()
        return out

    @model_validator(mode="after")
    def _collect_unknown(self):
        extra = self.__pydantic_extra__ or {}
        self._unknown = sorted(k for k in extra if k not in AUTH_PARAMETERS and k not in self.read_elsewhere)
        extra.clear()
        return self

    @property
    def warnings(self) -> list[str]:
        return [f"Unknown parameter '{name}' ignored" for name in self._unknown]
