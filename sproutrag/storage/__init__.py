"""storage: the LanceDB tables.

Owns the `Store` (commits, deletes, runs, maintenance: `store`), the Arrow rows of every
table and the stored-tree reader (`rows`), escaped filters (`filters`), schema
migration (`migrate`), the run lock (`locking`), the `index_settings` rows
(`index_info`), a database opened for reading (`reader`: `Reader`) and the consistency
check of a database (`check`).
May import: sproutrag's root modules, `trees`, `encoder`, `schemas`.
"""
