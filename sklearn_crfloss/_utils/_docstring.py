"""Docstring sections shared by several public objects, written once."""

__all__ = ["fill_doc"]


def fill_doc(**parts):
    """Decorator: put shared text into a docstring in place of ``{name}`` markers.

    Every occurrence of ``{name}`` in the decorated class's or function's
    docstring is replaced by ``parts[name]``, written without indentation
    (its first line goes where the marker stands, every further line is
    indented like the marker's line), so a shared Parameters or Returns
    section reads in the source once and in the rendered documentation
    (and ``help()``) on every object.

    Parameters
    ----------
    **parts : str
        The text of each marker.

    Returns
    -------
    callable
        The decorator; it returns the object it decorates, with its
        ``__doc__`` filled in (unchanged when Python runs with ``-OO`` and
        there is no docstring).

    Raises
    ------
    ValueError
        If a marker of ``parts`` does not occur in the docstring.
    """

    def decorate(obj):
        doc = obj.__doc__
        if doc is None:
            return obj
        lines = doc.split("\n")
        for name, text in parts.items():
            marker = "{" + name + "}"
            hits = [i for i, line in enumerate(lines) if marker in line]
            if not hits:
                raise ValueError(f"{obj.__qualname__} has no {marker} in its docstring")
            for i in hits:
                indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
                first, *rest = text.strip("\n").split("\n")
                body = "\n".join([first] + [indent + line if line else line for line in rest])
                lines[i] = lines[i].replace(marker, body)
        obj.__doc__ = "\n".join(lines)
        return obj

    return decorate
