"""One invented secret of every kind the detector knows, in the text it would sit in.

Built from pieces so no complete token sits in the source; none is real.
"""

from __future__ import annotations

import base64
import json


def _b64(value: dict[str, str]) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


_PEM_BODY = "MIIEowIBAAKCAQEA" + "q1w2e3r4t5y6" * 6
_JWT = (
    f"{_b64({'alg': 'HS256', 'typ': 'JWT'})}.{_b64({'sub': '1234567890'})}.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
)

# kind -> (the secret itself, a line of output that holds it)
SAMPLES: dict[str, tuple[str, str]] = {
    "private_key": (
        f"-----BEGIN RSA PRIVATE KEY-----\n{_PEM_BODY}\n-----END RSA PRIVATE KEY-----",
        f"$ cat id_rsa\n-----BEGIN RSA PRIVATE KEY-----\n{_PEM_BODY}\n-----END RSA PRIVATE KEY-----\n",
    ),
    "aws_key": ("AKIA" + "Z7QWERTY12345XYZ", "aws_access_key_id = AKIA" + "Z7QWERTY12345XYZ"),
    "github_token": (
        "ghp_" + "K9mW2xQ7vL4pR8sT1nB6cY3dF5gH0jZ2aE7u",
        "token: ghp_" + "K9mW2xQ7vL4pR8sT1nB6cY3dF5gH0jZ2aE7u",
    ),
    "gitlab_token": (
        "glpat-" + "Xy7Kp2Qm9Lw4Rt6Vb1Nc",
        "remote: https://oauth2:glpat-" + "Xy7Kp2Qm9Lw4Rt6Vb1Nc@gitlab.example/x.git",
    ),
    "anthropic_key": (
        "sk-ant-" + "api03-Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0",
        "ANTHROPIC_KEY is sk-ant-" + "api03-Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0",
    ),
    "openai_key": (
        "sk-proj-" + "Ab12Cd34Ef56Gh78Ij90Kl12Mn34",
        "using key sk-proj-" + "Ab12Cd34Ef56Gh78Ij90Kl12Mn34 now",
    ),
    "stripe_key": ("sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc", "Stripe.api_key = 'sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc'"),
    "slack_token": (
        "xoxb-" + "123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
        "SLACK xoxb-" + "123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    ),
    "google_api_key": (
        "AIza" + "SyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY",
        "maps key=AIza" + "SyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY&q=1",
    ),
    "npm_token": (
        "npm_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
        "//registry.npmjs.org/:_authToken=npm_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    ),
    "pypi_token": (
        "pypi-AgEIcHlwaS5vcmc" + "CJ" + "a1b2c3d4e5" * 7,
        "password = pypi-AgEIcHlwaS5vcmc" + "CJ" + "a1b2c3d4e5" * 7,
    ),
    "huggingface_token": (
        "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz01234567",
        "HF login hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz01234567",
    ),
    "jwt": (_JWT, f"cookie session={_JWT}; Path=/"),
    "url_password": ("Hunt3rTwo", "DATABASE_URL=postgres://app:Hunt3rTwo@db.internal:5432/app"),
    "authorization_header": ("dGVzdDpzZWNyZXQxMjM0NQ", "> Authorization: Bearer dGVzdDpzZWNyZXQxMjM0NQ"),
    "credential": ("Pa55w0rd-2026", "DB_PASSWORD=Pa55w0rd-2026"),
}
