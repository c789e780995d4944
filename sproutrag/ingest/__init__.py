"""ingest: corpus to indexed documents, as plain functions.

Owns discovery (`corpus`, `listing`), sentence chunks (`chunking`), the diff with the
database (`plan`), the chunk -> encode -> build_trees stages over a batch (`stages`),
the `runs` row and run outcomes (`run_summary`), the run's own work folder (`run_folder`)
and the index identity, the fingerprint documents record (`index_identity`).
May import: sproutrag's root modules, `trees`, `encoder`, `storage`, `schemas`.
"""
