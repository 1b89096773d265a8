"""schemathesis hooks for tests/schemathesis/run.sh (loaded through SCHEMATHESIS_HOOKS).

tus PATCH bodies are `application/offset+octet-stream` (tus 1.0): bytes, sent as schemathesis
sends `application/octet-stream`. Without this its fuzzing phase stops on that operation with
"Serialization not possible" (seen on 2026-11-28 once the run went to one worker).
"""

import schemathesis

schemathesis.serializer.alias("application/offset+octet-stream", "application/octet-stream")
