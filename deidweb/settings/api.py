"""The API's settings: authentication, throttles, REST framework and the OpenAPI schema."""

from .env import env_bool, env_rate
from .security import DEIDWEB_PROXY_COUNT

# API authentication: a per-user key (Bearer) first — so a request without credentials gets
# 401 with WWW-Authenticate — then the browser's session; HTTP Basic only when turned on.
DEIDWEB_API_BASIC_AUTH = env_bool("DEIDWEB_API_BASIC_AUTH", False)
DEIDWEB_API_AUTHENTICATION = [
    "apps.accounts.authentication.ApiTokenAuthentication",
    "rest_framework.authentication.SessionAuthentication",
] + (
    ["apps.accounts.authentication.LockoutAwareBasicAuthentication"]
    if DEIDWEB_API_BASIC_AUTH
    else []
)
# Requests per client address (anonymous), per user, and failed authentications per address.
DEIDWEB_API_RATES = {
    "anon": env_rate("DEIDWEB_API_RATE_ANON", "60/minute"),
    "user": env_rate("DEIDWEB_API_RATE_USER", "600/minute"),
    "auth": env_rate("DEIDWEB_API_RATE_AUTH", "20/hour"),
}

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": DEIDWEB_API_AUTHENTICATION,
    "DEFAULT_THROTTLE_CLASSES": [
        "rest_framework.throttling.AnonRateThrottle",
        "rest_framework.throttling.UserRateThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": DEIDWEB_API_RATES,
    # 0 without a proxy: REST framework then takes REMOTE_ADDR, not a client-written
    # X-Forwarded-For (None would trust the header), as apps.accounts.lockout counts it.
    "NUM_PROXIES": DEIDWEB_PROXY_COUNT,
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # JSON only: nested inputs (masking, answers, population) have no form encoding, and a
    # form would silently drop them. Uploads declare their multipart parsers themselves.
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "apps.core.pagination.StrictLimitOffsetPagination",
    "PAGE_SIZE": 50,
    "EXCEPTION_HANDLER": "apps.core.api.exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "deidweb API",
    "DESCRIPTION": (
        "Risk-based de-identification of structured data (Ontario IPC guidelines): data sets, "
        "profiling, variable classification and jobs."
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # The schema maps every endpoint and rule: for signed-in users, like the API itself.
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "apps.core.schema.document_errors",
    ],
    "COMPONENT_SPLIT_REQUEST": True,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "ENUM_NAME_OVERRIDES": {
        "VariableRoleEnum": "apps.classification.models.VariableRole",
        "AssessmentStatusEnum": "apps.assessments.models.AssessmentStatus",
        # The questionnaires' answer sets (Steps 3 and 5), shared by several questions.
        "LowModerateHighEnum": ["low", "moderate", "high"],
        "FewManyVeryManyEnum": ["few", "many", "very many"],
        "YesUnclearNoEnum": ["yes", "unclear", "no"],
        "YesPartlyNoEnum": ["yes", "partly", "no"],
        "YesPartialNoEnum": ["yes", "partial", "no"],
        # Step 1: the release models, and those that name a recipient (issue 23).
        "ReleaseModelEnum": "apps.assessments.serializers_release.RELEASE_MODELS",
        "PublicReleaseModelEnum": "apps.assessments.serializers_release.PUBLIC_RELEASE_MODELS",
        "NamedReleaseModelEnum": "apps.assessments.serializers_release.NAMED_RELEASE_MODELS",
        "AgreementKindEnum": "apps.assessments.models.AgreementKind",
        # A hierarchy's kind keeps the name it had while it was the only "kind" enum.
        "KindEnum": "apps.assessments.models.HierarchySpec.Kind",
        # Why a release must be re-assessed (issue 28).
        "ReassessmentTriggerKindEnum": "apps.reviews.models.ReassessmentTrigger.Kind",
        # A member's role in the organization.
        "RoleEnum": "apps.accounts.models.Role",
        # Person- or event-level: a linked table's role, a quasi-identifier's level (issue 25).
        "PersonEventEnum": ["person", "event"],
    },
}
