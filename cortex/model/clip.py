"""One line shortened for a person to read: the block's lines, the prompt's passages, the texts the
normalizer keeps.  Light on purpose (the hot paths import it)."""

# a block line's fixed part, "- [progress, 11mo, 0.90, pinned] Last session: " and the newline (cl100k_base,
# worst case): the normalizer adds it to a record's counted tokens, the block charges it for a short line
LINE_OVERHEAD_TOKENS = 18


def shorten(text: str, limit: int, cut=None) -> str:
    """`text` in at most `limit` characters, a closing "…" included: cut at its last space past half the
    limit, else at the limit itself, by `cut(text, n)` when given (`redact.cut`, which never keeps part of a
    secret) or plainly."""
    if len(text) <= limit:
        return text
    n = limit - 1
    at = text.rfind(" ", 0, n)
    head = text[:at] if at > limit // 2 else cut(text, n) if cut else text[:n]
    return head.rstrip(",;: ") + "…"
