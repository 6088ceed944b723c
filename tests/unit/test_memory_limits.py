"""The number reader every validator shares (service/memory/limits.py `finite_number`), and a vector
check that uses it: JSON's numbers are unbounded, so a value may be an integer no float holds."""

from __future__ import annotations

import math

import pytest

from service.memory.limits import InvalidInput, check_vector, finite_number

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0.5, 0.5), (3, 3.0), (-2, -2.0), (0, 0.0), (2**64, float(2**64)), (1.7e308, 1.7e308),
        (10**400, None), (-(10**400), None), (math.nan, None), (math.inf, None), (-math.inf, None),
        (True, None), (False, None), ("0.5", None), (None, None), ([1.0], None),
    ],
)
def test_finite_number(value, expected):
    assert finite_number(value) == expected


@pytest.mark.parametrize("bad", [10**400, math.nan, math.inf, 1e39, "1"])
def test_check_vector_refuses_what_no_32_bit_float_holds(bad):
    with pytest.raises(InvalidInput, match="finite numbers that fit a 32-bit float"):
        check_vector([bad, 1.0], 2)


def test_check_vector_keeps_a_good_vector():
    assert check_vector([3, 0.5], 2) == [3, 0.5]
