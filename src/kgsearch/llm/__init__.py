"""LLM providers: the protocol, an OpenAI-compatible chat client, a response cache and a
scripted fake for tests."""
