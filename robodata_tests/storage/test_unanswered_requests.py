"""A request the store never answered (a hung or resetting store) is told in robodata's words:
the store, the step, the object and the transport's reason; never object_store's "Error
performing GET http://..." text, its retry counts or Lance's source paths."""

from __future__ import annotations

import pytest

from robodata.errors import StorageUnreachableError
from robodata.storage._failures import storage_step

ENDPOINT = "http://127.0.0.1:9"
TABLE = "s3://lab/ds/frames.lance"


@pytest.mark.parametrize(
    ("lance_text", "told"),
    [
        (
            f"LanceError(IO): Generic S3 error: Error performing GET {ENDPOINT}/lab/ds/frames.lance/data/a.lance in "
            "30.001s - request or response body error: operation timed out, /home/runner/work/lance/lance/x.rs:1:2",
            "no answer to GET lab/ds/frames.lance/data/a.lance (operation timed out)",
        ),
        (
            f"LanceError(IO): Generic S3 error: Error performing PUT {ENDPOINT}/lab/ds/frames.lance/_versions/1.manifest "
            "in 701.759µs - HTTP error: error sending request, /home/runner/work/lance/lance/y.rs:3:4",
            "no answer to PUT lab/ds/frames.lance/_versions/1.manifest (error sending request)",
        ),
    ],
)
def test_a_request_without_an_answer_is_told_in_robodatas_words(lance_text, told):
    with pytest.raises(StorageUnreachableError) as raised:
        with storage_step("reading row 0", TABLE, {"aws_endpoint": ENDPOINT}):
            raise OSError(lance_text)
    assert str(raised.value) == f"{TABLE}: could not reach {ENDPOINT} while reading row 0: {told}"
