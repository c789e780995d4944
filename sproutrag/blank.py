"""Text that shows nothing: white space, NUL and the invisible format characters (zero-width
spaces and joiners, the byte order mark, the soft hyphen, word joiners). A document of
such text is empty (`ingest.sources.check_text`), and so is such a query
(`search.hits.check_query_text`): neither holds anything a search could match or return.
"""

from __future__ import annotations

import re

__all__ = ["shows_nothing"]

_INVISIBLE = re.compile("[\\s\x00\u00ad\u180e\u200b-\u200f\u2060-\u2064\ufeff]*")


def shows_nothing(text: str) -> bool:
    """Whether TEXT holds only white space, NUL and invisible format characters."""
    return _INVISIBLE.fullmatch(text) is not None
