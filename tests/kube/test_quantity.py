"""Kubernetes quantities become integers once, rounded up as the API server rounds them."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kube.quantity import QuantityError, parse_cpu_millis, parse_quantity

GiB = 2**30


@pytest.mark.parametrize(("text", "millis"), [
    pytest.param("500m", 500, id="millicores"),
    pytest.param("2", 2000, id="whole-cores"),
    pytest.param("0.1", 100, id="decimal-fraction"),
    pytest.param("1.5", 1500, id="decimal-cores"),
    pytest.param(".5", 500, id="leading-dot"),
    pytest.param("1e3", 1_000_000, id="exponent"),
    pytest.param("100u", 1, id="micro-rounds-up-to-one-millicore"),
    pytest.param("1500000n", 2, id="nano-rounds-up"),
    pytest.param("0", 0, id="zero"),
    pytest.param(2, 2000, id="yaml-integer"),
    pytest.param(0.25, 250, id="yaml-float"),
])
def test_cpu_in_millicores(text: str | int | float, millis: int) -> None:
    assert parse_cpu_millis(text) == millis


@pytest.mark.parametrize(("text", "value"), [
    pytest.param("1.5Gi", 3 * GiB // 2, id="binary-fraction"),
    pytest.param("100G", 100 * 10**9, id="decimal-suffix"),
    pytest.param("1e3", 1000, id="exponent"),
    pytest.param("1E3", 1000, id="exponent-upper-case"),
    pytest.param("1Ki", 1024, id="kibi"),
    pytest.param("8Gi", 8 * GiB, id="gibi"),
    pytest.param("1Ti", 2**40, id="tebi"),
    pytest.param("1k", 1000, id="kilo"),
    pytest.param("1M", 10**6, id="mega"),
    pytest.param("1E", 10**18, id="exa-not-exponent"),
    pytest.param("110", 110, id="plain-integer"),
    pytest.param("1.5", 2, id="fraction-rounds-up"),
    pytest.param("500m", 1, id="milli-rounds-up"),
    pytest.param("+1Mi", 2**20, id="explicit-plus"),
    pytest.param(" 1Gi", GiB, id="surrounding-space"),
    pytest.param(42, 42, id="yaml-integer"),
    pytest.param(1.5, 2, id="yaml-float-rounds-up"),
])
def test_quantity_in_base_units(text: str | int | float, value: int) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", [
    pytest.param("lots", id="word"),
    pytest.param("", id="empty"),
    pytest.param("1.2.3", id="two-dots"),
    pytest.param("Gi", id="suffix-only"),
    pytest.param("1GB", id="unknown-suffix"),
    pytest.param("1 Gi", id="space-before-suffix"),
    pytest.param("1e", id="exponent-without-digits"),
    pytest.param("--1", id="double-sign"),
    pytest.param(True, id="yaml-boolean"),
    pytest.param(None, id="null"),
    pytest.param(["1"], id="list"),
])
@pytest.mark.parametrize("parse", [parse_quantity, parse_cpu_millis], ids=["quantity", "cpu"])
def test_not_a_quantity(text: object, parse: Callable[[object], int]) -> None:
    with pytest.raises(QuantityError, match="is not a quantity"):
        parse(text)


def test_error_suggests_valid_forms() -> None:
    with pytest.raises(QuantityError) as info:
        parse_quantity("lots")
    assert str(info.value) == "'lots' is not a quantity (expected e.g. 500m, 2, 1.5Gi, 100G)"


def test_memoized_results_are_stable() -> None:
    assert parse_quantity("3Gi") == parse_quantity("3Gi") == 3 * GiB
    assert parse_cpu_millis("250m") == parse_cpu_millis("250m") == 250


@pytest.mark.parametrize(("value", "message"), [
    pytest.param("-1", "is negative", id="negative-string"),
    pytest.param(-1, "is negative", id="negative-integer"),
    pytest.param(-0.5, "is negative", id="negative-float"),
    pytest.param(2**63, "out of range", id="beyond-int64"),
    pytest.param("9223372036854775808", "out of range", id="beyond-int64-string"),
    pytest.param("8Ei", "out of range", id="eight-exbibytes"),
    pytest.param("1e9999999999", "out of range", id="huge-exponent"),
    pytest.param(float("inf"), "not a finite quantity", id="infinity"),
    pytest.param(float("nan"), "not a finite quantity", id="nan"),
    pytest.param("\u0661\u0662", "is not a quantity", id="arabic-indic-digits"),
    pytest.param("\uff11Gi", "is not a quantity", id="full-width-digit"),
    pytest.param("1" * 100, "longer than 64 characters", id="overlong"),
])
@pytest.mark.parametrize("parse", [parse_quantity, parse_cpu_millis], ids=["quantity", "cpu"])
def test_unusable_quantities(value: object, message: str, parse: Callable[[object], int]) -> None:
    with pytest.raises(QuantityError, match=message):
        parse(value)


@pytest.mark.parametrize(("text", "value"), [
    pytest.param("1e-999999", 1, id="tiny-exponent-rounds-up"),
    pytest.param("0e999999", 0, id="zero-with-huge-exponent"),
    pytest.param("9223372036854775807", 2**63 - 1, id="int64-max"),
])
def test_extreme_but_valid(text: str, value: int) -> None:
    assert parse_quantity(text) == value
