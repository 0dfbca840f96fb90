"""What a release may make public of a trial's text: endpoint hosts and host paths stripped, caps, the text budget."""

from __future__ import annotations

import pytest
from django.conf import LazySettings

from apps.results import publication
from apps.results.publication import ENDPOINT, PATH, public_text, strip_endpoints


@pytest.mark.parametrize(
    "text",
    [
        "http://127.0.0.1:8000/gateway/openai/v1/responses",
        "https://sb.example.com/gateway/anthropic/v1/messages",  # any host: a gateway path
        "http://host.containers.internal:8000/x",
        "host.docker.internal:8000",
        "http://gateway:8000/v1",  # a single-label host
        "http://db.svc/query",
        "10.88.0.7:8000",
        "[fd00::2]:8080",
        "fe80::1",
        "http://localhost:3000/",
    ],
)
def test_endpoints_are_stripped(text: str) -> None:
    assert strip_endpoints(f"call {text} now") == f"call {ENDPOINT} now"


def test_endpoint_assignments_and_configured_hosts_are_stripped(settings: LazySettings) -> None:
    settings.OPENAI_BASE_URL = "https://llm.corp.example"
    settings.ALLOWED_HOSTS = ["selfbench.example.org"]
    text = strip_endpoints(
        'OPENAI_BASE_URL=https://api.example.net/v1 "api_base": "https://x.example/v1" DB_HOST=db.corp:5432 '
        "https://llm.corp.example/v1/chat llm.corp.example:443 https://selfbench.example.org/api/w/acme/"
    )
    assert text == (
        f'OPENAI_BASE_URL={ENDPOINT} "api_base": "{ENDPOINT}" DB_HOST={ENDPOINT} {ENDPOINT} {ENDPOINT} {ENDPOINT}'
    )


def test_host_paths_log_paths_and_trial_names_are_stripped(settings: LazySettings) -> None:
    settings.MEDIA_ROOT = "/srv/selfbench/media"
    settings.HARBOR_TRIALS_DIR = "/srv/selfbench/media/trials"
    text = strip_endpoints(
        "wrote /srv/selfbench/media/trials/x/artifacts/a.txt, /logs/artifacts/b and /logs/agent/c.txt "
        "for sb-trial-0123456789abcdef-2"
    )
    assert text == f"wrote {PATH}, {PATH} and {PATH} for [REDACTED:trial]"


def test_what_is_not_an_endpoint_stays() -> None:
    text = (
        "see https://github.com/acme/widgets/pull/7; edit /app/widgets/greet.py; tests/test_x.py::test_a passed; "
        "std::vector<int>; python 3.12.1; version 1.2.3.4.5; the endpoint: returns 200; /tests/run-tests.sh; "
        "https://github.com/acme/gateway"
    )
    assert strip_endpoints(text) == text


def test_public_text_redacts_credentials_too() -> None:
    key = "sk-ant-api03-" + "x9Y8w7V6u5T4s3R2q1P0o9N8m7L6"
    assert public_text(f"ANTHROPIC_API_KEY={key} at http://10.0.0.1/") == (
        f"ANTHROPIC_API_KEY=[REDACTED:anthropic_key] at {ENDPOINT}"
    )


def test_cut_keeps_the_tail_or_both_ends_and_says_how_much_went() -> None:
    text = "a" * 10 + "b" * 10
    assert publication.cut(text, 20, keep="tail") == text
    assert publication.cut(text, 4, keep="tail") == "[... 16 characters cut ...]\nbbbb"
    assert publication.cut(text, 4, keep="ends") == "aa\n[... 16 characters cut ...]\nbb"


def test_the_text_budget_gives_texts_until_it_is_spent() -> None:
    budget = publication.TextBudget(10)
    assert budget.fit("12345") == "12345" and budget.fit(None) is None
    assert budget.fit("123456") == publication.OVER_BUDGET
    assert budget.fit("1") == publication.OVER_BUDGET  # spent: later texts never squeeze in out of order
