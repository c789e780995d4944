"""encoder: text to vectors and attention relations.

Owns the `Encoder` (chunk embeddings, per-window attention pooled into chunk pairs and
mixed by alpha: `encoder`), the fast forward passes and the hooked reference
(`attention`), one batch through the network (`forward_batches`), `DocumentEncoding` and
what the windows add up to per document (`document_encoding`), window and batch arithmetic
(`windows`), which model and device and how it loads (`loading`), a model's content
identity (`identity`), the aggregation weights and learned search parameters
(`weights`), and settings -> Encoder with the process's cache (`factory`).
May import: sproutrag's root modules, `trees`, `schemas`; torch and transformers lazily.
"""
