"""The runner half of the core: bind and validate the model's arguments, run the
tool (sync or async, timeouts, retries), consult the session's breaker and budget,
run parallel rounds, and hand every outcome to the guard.

``_pipeline`` holds the two pipelines (sync and async twins), ``_attempts`` one
attempt under a timeout and the retries, ``_pools`` the threads, ``_rounds`` the
rounds. May import: ``guard``, ``sessions``, ``schema``, ``policy``, ``telemetry``
and the bottom modules. Private.
"""
