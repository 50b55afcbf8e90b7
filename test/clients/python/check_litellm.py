import json, os
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"   # no internet here: use the bundled price map
from importlib.metadata import version
import litellm
litellm.suppress_debug_info = True   # else the anthropic/ route prints "Provider List" for non-Claude ids
cfg = json.loads(os.environ["SWITCHYARD_STACK"])
base = cfg["base"]; key = cfg["key"]; m = cfg["model"]; ok = []
r = litellm.completion(model=f"openai/{m}", api_base=base + "/v1", api_key=key, messages=[{"role": "user", "content": "hello litellm"}])
assert r.choices[0].message.content and r.usage.prompt_tokens > 0; ok.append("openai/ completion")
s = litellm.completion(model=f"openai/{m}", api_base=base + "/v1", api_key=key, messages=[{"role": "user", "content": "stream litellm"}], stream=True)
txt = "".join((c.choices[0].delta.content or "") for c in s); assert txt; ok.append("openai/ stream")
tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
r = litellm.completion(model=f"openai/{m}", api_base=base + "/v1", api_key=key, messages=[{"role": "user", "content": "weather Kyiv"}], tools=tools, tool_choice="required")
assert r.choices[0].message.tool_calls[0].function.name == "get_weather"; ok.append("openai/ tools")
r = litellm.completion(model=f"anthropic/{m}", api_base=base, api_key=key, max_tokens=64, messages=[{"role": "user", "content": "hello anthropic route"}])
assert r.choices[0].message.content and r.usage.prompt_tokens > 0; ok.append("anthropic/ completion")
s = litellm.completion(model=f"anthropic/{m}", api_base=base, api_key=key, max_tokens=64, messages=[{"role": "user", "content": "stream anthropic route"}], stream=True)
txt = "".join((c.choices[0].delta.content or "") for c in s); assert txt; ok.append("anthropic/ stream")
# Anthropic counts cache reads apart from input_tokens (for requests that mark cache breakpoints);
# LiteLLM adds them back, so both routes must report the same whole prompt, and the repeat must
# show its cache hit.
cached_system = {"role": "system", "content": [{"type": "text", "text": "You are a helpful assistant. " * 200, "cache_control": {"type": "ephemeral"}}]}
long = [cached_system, {"role": "user", "content": "hi"}]
via_chat = litellm.completion(model=f"openai/{m}", api_base=base + "/v1", api_key=key, max_tokens=8, messages=long).usage
via_messages = litellm.completion(model=f"anthropic/{m}", api_base=base, api_key=key, max_tokens=8, messages=long).usage
assert via_messages.prompt_tokens == via_chat.prompt_tokens, (via_messages, via_chat)
assert via_messages.prompt_tokens_details.cached_tokens > 0, via_messages
ok.append("anthropic/ cached prompt adds up like openai/")
e = litellm.embedding(model=f"openai/{cfg['embeddingModel']}", api_base=base + "/v1", api_key=key, input=["x", "y"])
assert len(e.data) == 2 and len(e.data[0]["embedding"]) == 768; ok.append("openai/ embedding")
r = litellm.responses(model=f"openai/{m}", api_base=base + "/v1", api_key=key, input="hello responses")
assert r.output; ok.append("openai/ responses")
print("litellm", version("litellm"), "PASS:", ", ".join(ok))
