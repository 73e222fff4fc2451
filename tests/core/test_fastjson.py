"""cortex.core.fastjson.decoded, with json called where it is UNDECIDED, gives what json gives: the same
value (types and float bits included) for every text json accepts, and json's exception for every text
it refuses, nesting depth included."""
import json
import math
import sys

import pytest
from hypothesis import given, settings, strategies as st

from cortex.core import fastjson

EDGES = [
    b'{"a":NaN}', b'{"a":Infinity}', b'[-Infinity]', b'{"a":1e400}', b'{"a":-1e400}', b'{"a":1e-400}', b'[5e-325]',
    b'[1.7976931348623157e308]', b'[1.7976931348623159e308]', b'[2.2250738585072011e-308]', b'[4.9e-324]',
    b'[0.1000000000000000055511151231257827]', b'[123456789012345678901234567890.5]',
    b'[18446744073709551615]', b'[18446744073709551616]', b'[-9223372036854775808]', b'[-9223372036854775809]',
    b'[123456789012345678901234567890]', b'[' + b'7' * 5000 + b']', b'[-0]', b'[-0.0]', b'[1E2]', b'[1.5e+3]',
    b'[0.0e+00]', b'[-0.0E-0]',
    b'{"a":"\\ud800"}', b'{"a":"\\udc00x"}', b'"\\ude00\\ud83d"', b'"\\ud83d\\u0041"', b'"\\ud83d\\ude00"',
    b'{"a":"\xed\xa0\x80"}', b'"\xf4\x90\x80\x80"', b'"\xf0\x9f\x98\x80"', b'{"a":"\xff"}', b'{"a":"\xc0\x80"}',
    b'\xef\xbb\xbf{"a":1}', '{"a":1}'.encode("utf-16"), '{"a":1}'.encode("utf-16-le"), '{"a":1}'.encode("utf-32"),
    b'{"a":"\x01"}', b'{"a":"\t"}', b'{"a":"\x7f"}', b'{"a":"\\u0000"}', b'"\xe2\x80\xa8"', b'"\xc2\xa0"',
    b'{"a":1,"a":2,"b":3}', b'{"b":1,"a":2,"b":3}', b'{"":""}', b'[true,false,null]', b'[True]', b'nul',
    b'  {"a":1}\r', b'\t{"a":1}\n ', b'\x0c{"a":1}', b'{"a":1}\x0b', b'{"a":1}\x00', b'\xc2\xa0{}', b'', b' ',
    b'[1,]', b'{"a":1,}', b'{,}', b'[,1]', b"{'a':1}", b'{"a"}', b'{"a":}', b'[1 2]', b'"abc', b'"\\x41"',
    b'"\\U00e9"', b'"\\u00E9"', b'-', b'1e', b'1e+', b'-01', b'+1', b'0x1', b'1_000', b'1.', b'.5', b'01',
    b'[' * 200 + b']' * 200, b'{"a":' * 200 + b'1' + b'}' * 200,
]


def fast(fallback=json.loads):
    def loads(text):  # the callers' two lines
        value = fastjson.decoded(text)
        if value is fastjson.UNDECIDED:
            value = fallback(text)
        return value
    return loads


def plain(fallback=json.loads):
    def loads(text):  # json called from the same depth
        return fallback(text)
    return loads


def outcome(fn, text):
    try:
        value = fn(text)
    except RecursionError:
        return ("raises", "RecursionError")
    except ValueError as e:
        return ("raises", type(e).__name__)
    return ("value", _exact(value))


def _exact(v):
    """A value with its types and float bits spelled out (1 == 1.0 == True and nan != nan otherwise)."""
    if isinstance(v, dict):
        return ("dict", [(k, _exact(x)) for k, x in v.items()])
    if isinstance(v, list):
        return ("list", [_exact(x) for x in v])
    if isinstance(v, float):
        return ("float", "nan" if math.isnan(v) else v.hex())
    return (type(v).__name__, v)


@pytest.mark.parametrize("text", EDGES)
def test_what_json_gives_on_edge_cases(text):
    assert outcome(fast(), text) == outcome(json.loads, text)
    try:
        s = text.decode("utf-8")
    except UnicodeDecodeError:
        return
    decode = json.JSONDecoder().decode
    assert outcome(fast(decode), s) == outcome(decode, s)


def _nesting(fn, text):
    """How deep the decoded lists nest, counted without recursion, or the exception's name."""
    try:
        v = fn(text)
    except (RecursionError, ValueError) as e:
        return type(e).__name__
    depth = 0
    while isinstance(v, list):
        depth, v = depth + 1, v[0] if v else None
    return depth


def test_past_json_nesting_limit_json_decides():
    # msgspec nests a few levels deeper than json from the same caller: the guard hands those texts to json
    for depth in range(sys.getrecursionlimit() - 200, sys.getrecursionlimit() + 10):
        text = b"[" * depth + b"]" * depth
        assert _nesting(fast(), text) == _nesting(plain(), text), depth


values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(1 << 80), max_value=1 << 80)
    | st.floats(allow_nan=True, allow_infinity=True) | st.text(),
    lambda kids: st.lists(kids, max_size=5) | st.dictionaries(st.text(max_size=8), kids, max_size=5), max_leaves=30)


@settings(max_examples=400, deadline=None, derandomize=True, database=None)
@given(values, st.booleans())
def test_serialized_values(value, ascii_only):
    text = json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    assert outcome(fast(), text) == outcome(json.loads, text)


@settings(max_examples=400, deadline=None, derandomize=True, database=None)
@given(st.from_regex(rb"\A-?(0|[1-9][0-9]{0,30})(\.[0-9]{1,30})?([eE][-+]?[0-9]{1,3})?\Z"))
def test_numbers(number):
    text = b"[" + number + b"]"
    assert outcome(fast(), text) == outcome(json.loads, text)


@settings(max_examples=400, deadline=None, derandomize=True, database=None)
@given(values, st.binary(min_size=1, max_size=4), st.integers(min_value=0))
def test_damaged_texts(value, junk, where):
    text = json.dumps(value).encode("utf-8", "surrogatepass")
    at = where % (len(text) + 1)
    text = text[:at] + junk + text[at + len(junk):]
    assert outcome(fast(), text) == outcome(json.loads, text)
