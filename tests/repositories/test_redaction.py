"""The redaction table: real-shaped credentials are removed, look-alikes that are not secrets stay."""

from __future__ import annotations

import base64

import pytest

from selfbench.redaction import redact, redact_report

# Built from pieces so this file itself never holds a whole credential-shaped literal for scanners to trip on.
GHP = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n"
    "VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK\n"
    "-----END RSA PRIVATE KEY-----"
)
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
    "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ."
    "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)

POSITIVES: list[tuple[str, str, str]] = [
    # (case, text, expected kind)
    ("github classic pat", f"export GITHUB_TOKEN={GHP} before running", "github_token"),
    ("github oauth", "gho_" + "16C7e42F292c6912E7710c838347Ae178B4a" + " leaked", "github_token"),
    ("github user-to-server", "ghu_" + "x" * 36, "github_token"),
    ("github server-to-server", "auth ghs_" + "0123456789abcdefghijABCDEFGHIJ012345", "github_token"),
    ("github refresh", "ghr_" + "1B4a2e77838347a7E420ce178F2E7c6912E169246c34E1ccbF6", "github_token"),
    ("github fine-grained", "github_pat_" + "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFG", "github_token"),
    ("aws access key id", "aws_access_key_id = AKIA" + "IOSFODNN7EXAMPLE", "aws_access_key"),
    ("aws sts key", "ASIA" + "Y34FZKBOKMUTVV7A", "aws_access_key"),
    ("aws secret assignment", "aws_secret_access_key=" + "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws_secret_key"),
    ("aws secret yaml", 'AWS_SECRET_KEY: "' + "je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY" + '"', "aws_secret_key"),
    ("openai legacy", "OPENAI key sk-" + "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKL", "openai_key"),
    ("openai project", "sk-proj-" + "Ab3dEf6hIj9kLm2oPq5sTu8wXy1zAb4dEf7hIj0kLm3o", "openai_key"),
    ("anthropic", "use sk-ant-api03-" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_AbCd" + " here", "anthropic_key"),
    ("slack bot", "xoxb-" + "123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "slack_token"),
    ("slack user", "xoxp-" + "2233445566-7788990011-1122334455-abcdef0123456789abcdef0123456789", "slack_token"),
    ("google api key", "key=AIza" + "SyDdI0hCZtE6vySjMm-WEfRq3CPzqKqqsHI", "google_api_key"),
    ("stripe live secret", "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc", "stripe_key"),
    ("stripe restricted", "rk_live_" + "51H8xYzAbCdEfGhIjKlMnOp", "stripe_key"),
    ("pem private key", f"key:\n{PEM}\nend", "private_key"),
    ("openssh private key", PEM.replace("RSA ", "OPENSSH "), "private_key"),
    ("jwt", f"Authorization: Bearer {JWT}", "jwt"),
    ("url credentials", "DATABASE_URL=postgres://app:s3cr3tPassw0rd@db.internal:5432/app", "url_credentials"),
    ("https url credentials", "git clone https://deploy:hunter2hunter2@git.example.com/x.git", "url_credentials"),
    ("password assignment", "password=correcthorse99", "secret_assignment"),
    ("token assignment", 'API_TOKEN="9f8e7d6c5b4a"', "secret_assignment"),
    ("secret assignment", "client_secret = Zm9vYmFyYmF6", "secret_assignment"),
    ("yaml password with digits", "  db_password: Tr0ub4dor&3", "secret_assignment"),
]

NEGATIVES: list[tuple[str, str]] = [
    ("commit sha", "Reverts 3f786850e387550fdab836ed7e6dc881de23001b and a1b2c3d"),
    ("uuid", "job 123e4567-e89b-12d3-a456-426614174000 finished"),
    (
        "base64 image",
        "![img](data:image/png;base64," + base64.b64encode(bytes(range(256)) * 3).decode() + ")",
    ),
    ("prose about tokens", "This PR refreshes the token before it expires and hashes the password with argon2."),
    ("prose with colon", "Token: refresh it on every request. Password: never logged."),
    ("tokenizer kwarg", "tokenizer=gpt2tokenizer and max_tokens=4096"),
    ("env placeholder", "password=${DB_PASSWORD} token=<your-token> secret=***"),
    ("url without password", "see https://user@example.com/path and git@github.com:org/repo.git"),
    ("branch name", "merged sk-fix-the-broken-login-flow-in-settings-page"),
    ("short ghp", "the ghp_ prefix marks classic tokens"),
    ("markdown table", "| key | value |\n|---|---|\n| timeout | 30 |"),
    ("semver and hashes", "bump lodash 4.17.21 → 4.17.22 (sha512-abcdef0123456789)"),
    ("aws docs", "Set AWS_SECRET_ACCESS_KEY in your environment; see the AKIA prefix docs."),
]


@pytest.mark.parametrize(("case", "text", "kind"), POSITIVES, ids=[p[0] for p in POSITIVES])
def test_redact_removes_real_shaped_credentials(case: str, text: str, kind: str) -> None:
    report = redact_report(text)
    assert kind in report.kinds, f"{case}: matched {report.kinds}"
    assert "[REDACTED:" in report.text


@pytest.mark.parametrize(("case", "text"), NEGATIVES, ids=[n[0] for n in NEGATIVES])
def test_redact_leaves_non_secrets_alone(case: str, text: str) -> None:
    assert redact(text) == text, case


def test_redact_keeps_the_key_and_url_host_around_the_secret() -> None:
    assert redact("password=correcthorse99") == "password=[REDACTED:secret_assignment]"
    assert redact("postgres://app:s3cr3tPassw0rd@db:5432/x") == "postgres://app:[REDACTED:url_credentials]@db:5432/x"


def test_redact_reports_a_prefixed_token_once_by_its_specific_kind() -> None:
    report = redact_report(f"token={GHP}")
    assert report.text == "token=[REDACTED:github_token]"
    assert report.kinds == ["github_token"]


def test_redact_removes_the_whole_pem_block() -> None:
    out = redact(f"before\n{PEM}\nafter")
    assert out == "before\n[REDACTED:private_key]\nafter"
