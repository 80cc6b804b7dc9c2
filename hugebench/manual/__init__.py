"""The manual's generated parts: the reference pages (docgen, an MkDocs hook) and the column reference."""
