"""search: queries over stored trees.

Owns tree mode and flat mode over arrays (`tree_search`: node scores, beam search,
calibration, rerank, the budget of k units), BM25 with section headings (`lexical`),
the database side (`retriever`: `Retriever`, the first stage, the tree cache of
`cache`), hits (`hits`), batch checks and writing (`batch`) and a reader's settings
(`reader_settings`).
May import: sproutrag's root modules, `trees`, `encoder`, `storage`, `ingest`, `schemas`.
"""
