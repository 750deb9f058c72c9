"""The real service's rules for the strings of each request (generated: do not edit by hand).

Made by ``scripts/extract_contract.py --rules`` from the facts-only extract of the service's
OpenAPI document (``tests/contract/data/documenso-<version>/openapi-facts.json``);
``tests/unit/test_service_rules.py`` checks that this file is what the script makes of it.
Routes are ``"METHOD /path"`` as the OpenAPI document writes them; a field is named by its path
in the JSON body (for a multipart route, in its ``payload`` part): ``.`` between keys, ``[]`` for
the items of a list, ``*`` for any key of a map.
:mod:`airflow_provider_docsign.service.outgoing` applies them.
"""

from __future__ import annotations

OPENAPI_VERSION = "1.0.0"

#: The ``maxLength`` of each string field that declares one (in JavaScript's UTF-16 units).
MAX_LENGTH: dict[str, dict[str, int]] = {
    "POST /document/create": {
        "externalId": 255,
        "meta.message": 5000,
        "meta.subject": 254,
        "recipients[].email": 254,
        "recipients[].name": 255,
        "title": 255,
    },
    "POST /document/create/beta": {
        "externalId": 255,
        "meta.message": 5000,
        "meta.subject": 254,
        "recipients[].email": 254,
        "recipients[].name": 255,
        "title": 255,
    },
    "POST /document/distribute": {
        "meta.message": 5000,
        "meta.subject": 254,
    },
    "POST /document/recipient/create": {
        "recipient.email": 254,
        "recipient.name": 255,
    },
    "POST /document/recipient/create-many": {
        "recipients[].email": 254,
        "recipients[].name": 255,
    },
    "POST /document/recipient/update": {
        "recipient.email": 254,
        "recipient.name": 255,
    },
    "POST /document/recipient/update-many": {
        "recipients[].email": 254,
        "recipients[].name": 255,
    },
    "POST /document/update": {
        "data.externalId": 255,
        "data.title": 255,
        "meta.message": 5000,
        "meta.subject": 254,
    },
    "POST /envelope/create": {
        "externalId": 255,
        "meta.message": 5000,
        "meta.subject": 254,
        "recipients[].email": 254,
        "recipients[].name": 255,
        "title": 255,
    },
    "POST /envelope/distribute": {
        "meta.message": 5000,
        "meta.subject": 254,
    },
    "POST /envelope/item/update-many": {
        "data[].title": 255,
    },
    "POST /envelope/recipient/create-many": {
        "data[].email": 254,
        "data[].name": 255,
    },
    "POST /envelope/recipient/update-many": {
        "data[].email": 254,
        "data[].name": 255,
    },
    "POST /envelope/update": {
        "data.externalId": 255,
        "data.title": 255,
        "meta.message": 5000,
        "meta.subject": 254,
    },
    "POST /envelope/use": {
        "override.message": 5000,
        "override.subject": 254,
        "override.title": 255,
        "recipients[].email": 254,
        "recipients[].name": 255,
    },
    "POST /folder/create": {
        "name": 100,
    },
    "POST /folder/update": {
        "data.name": 100,
    },
    "POST /template/create": {
        "meta.message": 5000,
        "meta.subject": 254,
        "publicDescription": 256,
        "publicTitle": 50,
        "title": 255,
    },
    "POST /template/create/beta": {
        "meta.message": 5000,
        "meta.subject": 254,
        "publicDescription": 256,
        "publicTitle": 50,
        "title": 255,
    },
    "POST /template/recipient/create": {
        "recipient.email": 254,
        "recipient.name": 255,
    },
    "POST /template/recipient/create-many": {
        "recipients[].email": 254,
        "recipients[].name": 255,
    },
    "POST /template/recipient/update": {
        "recipient.email": 254,
        "recipient.name": 255,
    },
    "POST /template/recipient/update-many": {
        "recipients[].email": 254,
        "recipients[].name": 255,
    },
    "POST /template/update": {
        "data.publicDescription": 256,
        "data.publicTitle": 50,
        "data.title": 255,
        "meta.message": 5000,
        "meta.subject": 254,
    },
    "POST /template/use": {
        "externalId": 255,
        "override.message": 5000,
        "override.subject": 254,
        "override.title": 255,
        "recipients[].email": 254,
        "recipients[].name": 255,
    },
}

#: Fields that hold an e-mail address; the value says whether the empty string is allowed too.
EMAIL: dict[str, dict[str, bool]] = {
    "POST /document/create": {
        "meta.emailReplyTo": False,
        "recipients[].email": False,
    },
    "POST /document/create/beta": {
        "meta.emailReplyTo": False,
        "recipients[].email": False,
    },
    "POST /document/distribute": {
        "meta.emailReplyTo": False,
    },
    "POST /document/recipient/create": {
        "recipient.email": False,
    },
    "POST /document/recipient/create-many": {
        "recipients[].email": False,
    },
    "POST /document/recipient/update": {
        "recipient.email": False,
    },
    "POST /document/recipient/update-many": {
        "recipients[].email": False,
    },
    "POST /document/update": {
        "meta.emailReplyTo": False,
    },
    "POST /envelope/create": {
        "delegatedDocumentOwner": False,
        "meta.emailReplyTo": False,
        "recipients[].email": True,
    },
    "POST /envelope/distribute": {
        "meta.emailReplyTo": False,
    },
    "POST /envelope/recipient/create-many": {
        "data[].email": True,
    },
    "POST /envelope/recipient/update-many": {
        "data[].email": True,
    },
    "POST /envelope/recipient/{recipientId}/reject": {
        "actAsEmail": False,
    },
    "POST /envelope/update": {
        "meta.emailReplyTo": False,
    },
    "POST /envelope/use": {
        "recipients[].email": True,
    },
    "POST /template/create": {
        "meta.emailReplyTo": False,
    },
    "POST /template/create/beta": {
        "meta.emailReplyTo": False,
    },
    "POST /template/recipient/create": {
        "recipient.email": False,
    },
    "POST /template/recipient/create-many": {
        "recipients[].email": False,
    },
    "POST /template/recipient/update": {
        "recipient.email": False,
    },
    "POST /template/recipient/update-many": {
        "recipients[].email": False,
    },
    "POST /template/update": {
        "meta.emailReplyTo": False,
    },
    "POST /template/use": {
        "recipients[].email": True,
    },
}

#: Fields that hold a URL (``format: uri``).
URL: dict[str, dict[str, bool]] = {
    "POST /document/attachment/create": {
        "data.data": True,
    },
    "POST /document/attachment/update": {
        "data.data": True,
    },
    "POST /document/create": {
        "attachments[].data": True,
    },
    "POST /document/create/beta": {
        "attachments[].data": True,
    },
    "POST /envelope/attachment/create": {
        "data.data": True,
    },
    "POST /envelope/attachment/update": {
        "data.data": True,
    },
    "POST /envelope/create": {
        "attachments[].data": True,
    },
    "POST /envelope/use": {
        "attachments[].data": True,
    },
    "POST /template/create": {
        "attachments[].data": True,
    },
    "POST /template/create/beta": {
        "attachments[].data": True,
    },
    "POST /template/use": {
        "attachments[].data": True,
    },
}
