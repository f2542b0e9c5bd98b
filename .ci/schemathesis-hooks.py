# schemathesis hooks for .ci/api-contract: our two non-JSON media types.
import json

import schemathesis

# UAF bodies are JSON under their own media type (application/fido+uaf;charset=UTF-8): read and write them as JSON,
# so that the answers of the UAF endpoints are validated against the document too.
schemathesis.serializer.alias("application/fido+uaf", "application/json")


@schemathesis.deserializer("application/fido+uaf")
def fido_uaf(ctx, response):
    return json.loads(response.content)


# A compact JWS is sent as its text.
@schemathesis.serializer("application/jose")
def jose(ctx, value):
    return value.encode("utf-8") if isinstance(value, str) else json.dumps(value).encode("utf-8")
