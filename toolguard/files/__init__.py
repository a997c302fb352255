"""Policy files (TOML): loading and errors (``_load``), the keys of a table
(``_keys``), one value (``_values``), where a key is written (``_lines``), and import
paths ``module:attr`` (``_imports``).

May import: ``policy`` and the bottom modules. Private: ``load_policy`` and
``PolicyFileError`` are re-exported by ``toolguard``.
"""
