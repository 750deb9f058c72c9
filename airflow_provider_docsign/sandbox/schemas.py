"""Request schemas of the real v2 routes (the parts the sandbox checks), as :mod:`.validation` specs."""

from __future__ import annotations

from .validation import S, Spec

ENVELOPE_TYPES = ("DOCUMENT", "TEMPLATE")
STATUSES = ("DRAFT", "PENDING", "COMPLETED", "REJECTED", "CANCELLED")
SOURCES = ("DOCUMENT", "TEMPLATE", "TEMPLATE_DIRECT_LINK")
VISIBILITIES = ("EVERYONE", "MANAGER_AND_ABOVE", "ADMIN")
ROLES = ("CC", "SIGNER", "VIEWER", "APPROVER", "ASSISTANT")
FIELD_TYPES = (
    "SIGNATURE",
    "FREE_SIGNATURE",
    "INITIALS",
    "NAME",
    "EMAIL",
    "DATE",
    "TEXT",
    "NUMBER",
    "RADIO",
    "CHECKBOX",
    "DROPDOWN",
)
SIGNATURE_TYPES = ("SIGNATURE", "FREE_SIGNATURE")
FOLDER_TYPES = ("DOCUMENT", "TEMPLATE")
ACCESS_AUTH = ("ACCOUNT", "TWO_FACTOR_AUTH")
ACTION_AUTH = ("ACCOUNT", "PASSKEY", "TWO_FACTOR_AUTH", "PASSWORD")
LANGUAGES = ("de", "en", "fr", "es", "it", "nl", "pl", "pt-BR", "ja", "ko", "zh")
DOWNLOAD_VERSIONS = ("original", "signed", "pending")

# The type's fieldMeta defaults (v2.17 ``FIELD_*_META_DEFAULT_VALUES``, packages/lib/types/field-meta.ts):
# the request schema of create-many, update-many and create defaults a *missing* fieldMeta to them, so a
# field created without one stores them (TEXT and NUMBER as recorded, templates/21), and an update that
# leaves fieldMeta out resets the field's label, placeholder, required... to them (documenso#3286,
# recordings fieldmeta/50-52).
FIELD_META_DEFAULTS: dict[str, dict[str, object] | None] = {
    "SIGNATURE": {"fontSize": 18, "overflow": "auto", "type": "signature"},
    "FREE_SIGNATURE": None,
    "INITIALS": {"type": "initials", "fontSize": 12, "textAlign": "left"},
    "NAME": {"type": "name", "fontSize": 12, "textAlign": "left"},
    "EMAIL": {"type": "email", "fontSize": 12, "textAlign": "left", "overflow": "auto"},
    "DATE": {"type": "date", "fontSize": 12, "textAlign": "left", "overflow": "auto"},
    "TEXT": {
        "type": "text",
        "fontSize": 12,
        "textAlign": "left",
        "label": "",
        "placeholder": "",
        "text": "",
        "required": False,
        "readOnly": False,
    },
    "NUMBER": {
        "label": "",
        "placeholder": "",
        "required": False,
        "readOnly": False,
        "fontSize": 12,
        "type": "number",
        "textAlign": "left",
    },
    "RADIO": {
        "type": "radio",
        "fontSize": 12,
        "values": [{"id": 1, "checked": False, "value": ""}],
        "required": False,
        "readOnly": False,
        "direction": "vertical",
    },
    "CHECKBOX": {
        "type": "checkbox",
        "fontSize": 12,
        "values": [{"id": 1, "checked": False, "value": ""}],
        "validationRule": "",
        "validationLength": 0,
        "required": False,
        "readOnly": False,
        "direction": "vertical",
    },
    "DROPDOWN": {
        "type": "dropdown",
        "fontSize": 12,
        "values": [{"value": "Option 1"}],
        "defaultValue": "",
        "required": False,
        "readOnly": False,
    },
}
# Inside a fieldMeta that *is* given, only these keys get a default (zod ``.optional().default()``); the
# rest is stored as given (recording fieldmeta/50: label, placeholder, required and type, nothing more).
FIELD_META_KEY_DEFAULTS: dict[str, dict[str, object]] = {
    "signature": {"overflow": "auto"},
    "email": {"overflow": "auto"},
    "date": {"overflow": "auto"},
    "radio": {"direction": "vertical"},
    "checkbox": {"direction": "vertical"},
}


def _opt(kind: str, **kw: object) -> Spec:
    return S(kind, optional=True, **kw)  # type: ignore[arg-type]


def _many(item_props: dict[str, Spec]) -> Spec:
    """The body of a ``create-many``/``update-many`` route: ``envelopeId`` and a non-empty ``data`` list."""
    return S(
        "object",
        props={
            "envelopeId": S("string"),
            "data": S("array", minimum=1, items=S("object", props=item_props)),
        },
    )


COORD = S("number", minimum=0, maximum=100)
OPT_COORD = _opt("number", minimum=0, maximum=100)

META = _opt(
    "object",
    props={
        "subject": _opt("string", maximum=254),
        "message": _opt("string", maximum=5000),
        "timezone": _opt("string"),
        "dateFormat": _opt("string"),
        "distributionMethod": _opt("enum", options=("EMAIL", "NONE")),
        "signingOrder": _opt("enum", options=("PARALLEL", "SEQUENTIAL")),
        "allowDictateNextSigner": _opt("boolean"),
        "redirectUrl": _opt("string"),
        "language": _opt("enum", options=LANGUAGES),
        "typedSignatureEnabled": _opt("boolean"),
        "uploadSignatureEnabled": _opt("boolean"),
        "drawSignatureEnabled": _opt("boolean"),
        "emailId": _opt("string", nullable=True),
        "emailReplyTo": _opt("string", nullable=True, email=True),
        "emailSettings": _opt("object", nullable=True),
        "envelopeExpirationPeriod": _opt("object", nullable=True),
        "reminderSettings": _opt("object", nullable=True),
    },
)

CREATE_FIELD = S(
    "object",
    props={
        "type": S("enum", options=FIELD_TYPES),
        "fieldMeta": _opt("object"),
        "identifier": _opt("union", alternatives=(S("number"), S("string"))),
        "page": S("number", minimum=1, integer=True),
        "positionX": COORD,
        "positionY": COORD,
        "width": COORD,
        "height": COORD,
    },
)

CREATE_RECIPIENT = S(
    "object",
    props={
        "email": S("string", email=True, allow_empty_email=True, maximum=254),
        "name": S("string", maximum=255, default=""),
        "role": S("enum", options=ROLES),
        "signingOrder": _opt("number"),
        "accessAuth": S("array", items=S("enum", options=ACCESS_AUTH), default=[]),
        "actionAuth": S("array", items=S("enum", options=(*ACTION_AUTH, "EXPLICIT_NONE")), default=[]),
        "fields": _opt("array", items=CREATE_FIELD),
    },
)

CREATE_PAYLOAD = S(
    "object",
    props={
        "title": S("string", minimum=1, maximum=255, trim=True),
        "type": S("enum", options=ENVELOPE_TYPES),
        "externalId": _opt("string", maximum=255, trim=True),
        "visibility": _opt("enum", options=VISIBILITIES),
        "globalAccessAuth": _opt("array", items=S("enum", options=ACCESS_AUTH)),
        "globalActionAuth": _opt("array", items=S("enum", options=ACTION_AUTH)),
        "formValues": _opt("object"),
        "folderId": _opt("string"),
        "delegatedDocumentOwner": _opt("string", email=True),
        "recipients": _opt("array", items=CREATE_RECIPIENT),
        "meta": META,
        "attachments": _opt("array", items=S("object")),
    },
)

FIND_QUERY = S(
    "object",
    props={
        "query": _opt("string"),
        "page": _opt("number", minimum=1, coerce=True),
        "perPage": _opt("number", minimum=1, maximum=100, coerce=True),
        "type": _opt("enum", options=ENVELOPE_TYPES),
        "templateId": _opt("number", coerce=True),
        "source": _opt("enum", options=SOURCES),
        "status": _opt("enum", options=STATUSES),
        "hasExpiredRecipients": _opt("enum", options=("true", "false")),
        "folderId": _opt("string"),
        "orderByColumn": _opt("enum", options=("createdAt",)),
        "orderByDirection": _opt("enum", options=("asc", "desc")),
    },
)

PAGE_QUERY = S(
    "object",
    props={
        "page": _opt("number", minimum=1, coerce=True),
        "perPage": _opt("number", minimum=1, maximum=100, coerce=True),
        "orderByColumn": _opt("enum", options=("createdAt",)),
        "orderByDirection": _opt("enum", options=("asc", "desc")),
    },
)

GET_MANY = S(
    "object",
    props={
        "ids": S(
            "object",
            props={
                "type": S("enum", options=("envelopeId", "documentId", "templateId")),
                "ids": S("array", minimum=1, maximum=20, items=S("any")),
            },
        )
    },
)

ENVELOPE_ID_BODY = S("object", props={"envelopeId": S("string")})

UPDATE_ENVELOPE = S(
    "object",
    props={
        "envelopeId": S("string"),
        "data": _opt(
            "object",
            props={
                "title": _opt("string", minimum=1, maximum=255, trim=True),
                "externalId": _opt("string", nullable=True, maximum=255),
                "visibility": _opt("enum", options=VISIBILITIES),
                "globalAccessAuth": _opt("array", items=S("enum", options=ACCESS_AUTH)),
                "globalActionAuth": _opt("array", items=S("enum", options=ACTION_AUTH)),
                "folderId": _opt("string", nullable=True),
                "templateType": _opt("enum", options=("PUBLIC", "PRIVATE", "ORGANISATION")),
            },
        ),
        "meta": META,
    },
)

DISTRIBUTE = S(
    "object",
    props={"envelopeId": S("string"), "meta": META},
)

REDISTRIBUTE = S(
    "object",
    props={"envelopeId": S("string"), "recipients": S("array", minimum=1, items=S("number"))},
)

CANCEL = S("object", props={"envelopeId": S("string"), "reason": _opt("string")})

ITEM_UPDATE_MANY = _many(
    {
        "envelopeItemId": S("string"),
        "order": _opt("number", minimum=1, integer=True),
        # Trimmed, then 1-255, as the service's ZDocumentTitleSchema (document-router/schema.ts) does.
        "title": _opt("string", minimum=1, maximum=255, trim=True),
    }
)

ITEM_DELETE = S("object", props={"envelopeId": S("string"), "envelopeItemId": S("string")})

RECIPIENT_CREATE_MANY = _many(
    {
        "email": S("string", email=True, allow_empty_email=True, maximum=254),
        "name": S("string", maximum=255, default=""),
        "role": S("enum", options=ROLES),
        "signingOrder": _opt("number", nullable=True),
        "accessAuth": S("array", items=S("enum", options=ACCESS_AUTH), default=[]),
        "actionAuth": S("array", items=S("enum", options=(*ACTION_AUTH, "EXPLICIT_NONE")), default=[]),
    }
)

RECIPIENT_UPDATE_MANY = _many(
    {
        "id": S("number", integer=True),
        "email": _opt("string", email=True, allow_empty_email=True, maximum=254),
        "name": _opt("string", maximum=255),
        "role": _opt("enum", options=ROLES),
        "signingOrder": _opt("number", nullable=True),
        "accessAuth": _opt("array", items=S("enum", options=ACCESS_AUTH)),
        "actionAuth": _opt("array", items=S("enum", options=(*ACTION_AUTH, "EXPLICIT_NONE"))),
    }
)

RECIPIENT_DELETE = S("object", props={"recipientId": S("number", integer=True)})

RECIPIENT_REJECT = S(
    "object",
    props={"envelopeId": S("string"), "reason": S("string", minimum=1), "actAsEmail": _opt("string")},
)

FIELD_CREATE_MANY = _many(
    {
        "recipientId": S("number", integer=True),
        "envelopeItemId": _opt("string"),
        "type": S("enum", options=FIELD_TYPES),
        "fieldMeta": _opt("object"),
        "page": _opt("number", minimum=1, integer=True),
        "positionX": OPT_COORD,
        "positionY": OPT_COORD,
        "width": OPT_COORD,
        "height": OPT_COORD,
        "placeholder": _opt("string"),
        "matchAll": _opt("boolean"),
    }
)

FIELD_UPDATE_MANY = _many(
    {
        "id": S("number", integer=True),
        "type": S("enum", options=FIELD_TYPES),
        "fieldMeta": _opt("object"),
        "envelopeItemId": _opt("string"),
        "page": _opt("number", minimum=1, integer=True),
        "positionX": OPT_COORD,
        "positionY": OPT_COORD,
        "width": OPT_COORD,
        "height": OPT_COORD,
    }
)

FIELD_DELETE = S("object", props={"fieldId": S("number", integer=True)})

FOLDER_FIND = S(
    "object",
    props={
        "parentId": _opt("string", nullable=True),
        "type": _opt("enum", options=FOLDER_TYPES),
        "query": _opt("string"),
        "page": _opt("number", minimum=1, coerce=True),
        "perPage": _opt("number", minimum=1, maximum=100, coerce=True),
    },
)

FOLDER_CREATE = S(
    "object",
    props={
        "name": S("string", minimum=2, maximum=100),
        "parentId": _opt("string", nullable=True),
        "type": _opt("enum", options=FOLDER_TYPES),
    },
)

FOLDER_UPDATE = S(
    "object",
    props={
        "folderId": S("string"),
        "data": S(
            "object",
            props={
                "name": _opt("string", minimum=2, maximum=100),
                "parentId": _opt("string", nullable=True),
                "visibility": _opt("enum", options=VISIBILITIES),
                "pinned": _opt("boolean"),
            },
        ),
    },
)

FOLDER_DELETE = S("object", props={"folderId": S("string")})
