"""``provider_facts``: what the provider a set of settings chooses is, read without building it."""

from aiforge.core.settings import load_settings
from aiforge.providers.facts import ProviderFacts, provider_facts


def test_a_remote_provider_is_not_embedded_and_embeds_itself() -> None:
    facts = provider_facts(load_settings(PROVIDER="openai", OPENAI_API_KEY="sk-test"))
    assert facts == ProviderFacts(
        "openai",
        embedded=False,
        vectors="openai",
        chat_model_vectors=None,
        reads_files=("image", "pdf"),
        file_rules="openai",
    )


def test_which_files_a_provider_reads_and_by_whose_rules_is_read_off_its_class() -> None:
    def files(provider: str) -> tuple[tuple[str, ...], str | None]:
        facts = provider_facts(load_settings(PROVIDER=provider))
        return facts.reads_files, facts.file_rules

    assert files("anthropic") == (("image", "pdf"), "anthropic")
    assert files("internal_gateway") == (("image", "pdf"), "openai")
    assert files("vllm") == ((), "openai")  # text unless FILE_INPUT="native": a vision model may be behind it
    assert files("scripted") == ((), "openai")


def test_the_vectors_provider_is_the_embedding_setting_when_given() -> None:
    facts = provider_facts(load_settings(PROVIDER="scripted", EMBEDDING_PROVIDER="openai"))
    assert (facts.name, facts.embedded, facts.vectors) == ("scripted", False, "openai")
