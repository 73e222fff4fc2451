"""json.loads for transcript lines, three to four times faster: msgspec's JSON decoder where it gives what
json gives, json itself everywhere else.

The normalizer decodes every line of every transcript (43.6 MB of the throughput bench: 0.4 s of CPU with
json, 0.1 s with msgspec).  msgspec returns the same value as json for every text it accepts: the same
types (dict, list, str, int of any size, float, bool, None), the same floats (both round correctly), the
last of duplicate keys at the first one's place.  What json accepts and msgspec refuses (NaN and Infinity,
numbers that overflow a float, lone surrogates, a UTF-8 byte order mark, UTF-16 and UTF-32, nesting past
its limit) raises in msgspec and is handed to json, so it gets json's value or json's exception.  The one
text msgspec accepts and json refuses is one nested a few levels past json's recursion limit (json's
own Python frames are on the stack, msgspec's are not): a text holding more opening brackets than half
the recursion limit is left to json (4% of the bench's bytes), called by the caller itself so that its
limit stays where it was (exact while the caller's stack is less than half the recursion limit deep).

orjson, as fast, turns an integer past 64 bits into a float without an error, which only a scan of the
text for long digit runs could catch.
"""
import sys

try:
    from msgspec.json import Decoder as _Decoder
except ImportError:  # the package is missing: json alone, same results
    _fast = None
else:
    _fast = _Decoder().decode


UNDECIDED = object()  # what `decoded` returns for a text it leaves to json


def decoded(data):
    """json.loads(data) for bytes or str, or UNDECIDED: the caller then calls json itself (json.loads, or a
    decoder's decode for str), where it called it before, so even its recursion limit is where it was:

        value = fastjson.decoded(raw)
        if value is fastjson.UNDECIDED:
            value = json.loads(raw)
    """
    if _fast is None:
        return UNDECIDED
    most = sys.getrecursionlimit() // 2
    if len(data) > 2 * most:  # room for more than `most` nested pairs: count the opening brackets
        opening = (b"[", b"{") if isinstance(data, bytes) else ("[", "{")
        if data.count(opening[0]) + data.count(opening[1]) > most:
            return UNDECIDED
    try:
        return _fast(data)
    except Exception:
        return UNDECIDED
