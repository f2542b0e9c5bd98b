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



# Credentials, set here for every call (not with `st run -H`, which would override them): the administrator JWT
# .ci/api-contract mints, or, for the Auth Cloud API (/api/v1/…, but its open status endpoint), an access key made
# with `mauth admin access-key create`, so that those operations are exercised past their key check too.
import os

ADMIN_JWT = os.environ.get("MAUTH_CONTRACT_JWT")
ACCESS_KEY = os.environ.get("MAUTH_CONTRACT_ACCESS_KEY")


@schemathesis.hook
def before_call(ctx, case, kwargs):
    auth_cloud = case.path.startswith("/api/v1/") and case.path != "/api/v1/status"
    credential = ACCESS_KEY if auth_cloud else ADMIN_JWT
    if not credential:
        return
    headers = dict(case.headers or {})
    headers["Authorization"] = f"Bearer {credential}"
    case.headers = headers
