"""TEMPORARY stub on branch i10-core; replaced by part A's segments.py at merge."""


def split_label(label):
    text = label if isinstance(label, str) else str(label)
    if text == "O":
        return "O", ""
    prefix, sep, typ = text.partition("-")
    if not sep:
        return "", ""
    return prefix, typ
