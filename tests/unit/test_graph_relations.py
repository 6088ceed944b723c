"""service.graph.registry: the registry and the validation of one association (pure)."""

from datetime import datetime, timezone

import pytest

from service.graph.registry import (
    AUTHORABLE_TYPES,
    SUPERSEDING_TYPES,
    SYSTEM_TYPES,
    Association,
    AssociationError,
    validate_association,
)
from service.graph.supersession import state_time, supersession_entry
from service.memory.models import valid_id

pytestmark = pytest.mark.unit


def check(**item):
    return validate_association({"memory1_id": "a", "memory2_id": "b", **item}, id_ok=valid_id)


def test_registry_matches_the_spec():
    assert list(AUTHORABLE_TYPES) == [
        "RELATES_TO", "LEADS_TO", "OCCURRED_BEFORE", "PREFERS_OVER", "EXEMPLIFIES", "CONTRADICTS",
        "REINFORCES", "INVALIDATED_BY", "EVOLVED_INTO", "DERIVED_FROM", "PART_OF",
    ]
    assert SYSTEM_TYPES == ("SIMILAR_TO", "PRECEDED_BY", "DISCOVERED")
    assert SUPERSEDING_TYPES == ("INVALIDATED_BY", "EVOLVED_INTO")  # CONTRADICTS does not suppress


def test_defaults_and_case_insensitive_type():
    assert check() == Association("a", "b", "RELATES_TO", 0.5, {})
    assert check(type=" prefers_over ", strength=1, context="work", reason="speed") == Association(
        "a", "b", "PREFERS_OVER", 1.0, {"context": "work", "reason": "speed"}
    )
    assert check(strength=None).strength == 0.5


def test_properties_belong_to_their_type():
    # Undeclared properties are ignored (AutoMem keeps only the type's properties).
    assert check(type="RELATES_TO", reason="x", confidence=0.3).properties == {}
    assert check(type="EXEMPLIFIES", pattern_type="retry", confidence=0.75).properties == {"pattern_type": "retry", "confidence": 0.75}
    assert check(type="REINFORCES", observations=3).properties == {"observations": 3}
    assert check(type="INVALIDATED_BY", timestamp="2025-01-02T03:04:05Z").properties == {"timestamp": "2025-01-02T03:04:05+00:00"}
    assert check(type="PART_OF", role="step", context="deploy").properties == {"role": "step", "context": "deploy"}
    edge = check(type="EVOLVED_INTO")
    assert edge.supersedes and edge.edge_id == "a|EVOLVED_INTO|b"
    assert not check(type="CONTRADICTS").supersedes


@pytest.mark.parametrize(
    ("item", "fragment"),
    [
        ({"memory2_id": "a"}, "itself"),
        ({"type": "SIMILAR_TO"}, "system relationship type"),
        ({"type": "discovered"}, "system relationship type"),
        ({"type": "LIKES"}, "unknown relationship type"),
        ({"type": ""}, "non-empty"),
        ({"strength": 1.5}, "between 0 and 1"),
        ({"strength": -0.1}, "between 0 and 1"),
        ({"strength": "high"}, "number"),
        ({"strength": True}, "number"),
        ({"type": "EXEMPLIFIES", "confidence": 2}, "confidence must be between 0 and 1"),
        ({"type": "REINFORCES", "observations": -1}, "observations"),
        ({"type": "REINFORCES", "observations": 1.5}, "observations"),
        ({"type": "INVALIDATED_BY", "timestamp": "yesterday-ish"}, "ISO 8601"),
        ({"type": "CONTRADICTS", "reason": 5}, "reason must be a string"),
        ({"type": "PART_OF", "role": "x" * 2001}, "longer than"),
        ({"memory1_id": ""}, "required"),
        ({"memory1_id": "bad id!"}, "not a valid memory id"),
    ],
)
def test_invalid_associations(item, fragment):
    with pytest.raises(AssociationError, match=fragment):
        check(**item)


def test_not_an_object():
    with pytest.raises(AssociationError, match="object"):
        validate_association(["a", "b"], id_ok=valid_id)


def test_state_time_is_fixed_width_so_strings_sort_chronologically():
    a = state_time(datetime(2025, 1, 1, tzinfo=timezone.utc))
    b = state_time(datetime(2025, 1, 1, 0, 0, 0, 500, tzinfo=timezone.utc))
    assert a == "2025-01-01T00:00:00.000000+00:00" and len(a) == len(b) and a < b


def test_supersession_entry_time_comes_from_the_timestamp_property_or_now():
    now = datetime(2025, 6, 1, 12, tzinfo=timezone.utc)
    entry, keep = supersession_entry(check(type="EVOLVED_INTO", strength=0.8), now)
    assert entry == {"by": "b", "type": "EVOLVED_INTO", "at": "2025-06-01T12:00:00.000000+00:00", "strength": 0.8} and keep
    entry, keep = supersession_entry(check(type="INVALIDATED_BY", timestamp="2025-05-01"), now)
    assert entry["at"] == "2025-05-01T00:00:00.000000+00:00" and not keep
