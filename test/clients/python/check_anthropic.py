import json, os
import anthropic
from anthropic import Anthropic
cfg = json.loads(os.environ["SWITCHYARD_STACK"])
c = Anthropic(base_url=cfg["base"], api_key=cfg["key"])
m = cfg["model"]; ok = []
r = c.messages.create(model=m, max_tokens=64, messages=[{"role": "user", "content": "hello claude"}])
assert r.content[0].text and r.usage.input_tokens > 0; ok.append("messages")
with c.messages.stream(model=m, max_tokens=64, system="be brief", messages=[{"role": "user", "content": "stream it"}]) as st:
    text = "".join(st.text_stream)
    fin = st.get_final_message()
assert text and fin.usage.output_tokens > 0; ok.append("messages stream")
tools = [{"name": "get_weather", "description": "w", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]
r = c.messages.create(model=m, max_tokens=128, tools=tools, tool_choice={"type": "any"}, messages=[{"role": "user", "content": "weather in Oslo"}])
tu = [b for b in r.content if b.type == "tool_use"][0]; assert r.stop_reason == "tool_use" and tu.input["city"]
r2 = c.messages.create(model=m, max_tokens=128, tools=tools, messages=[{"role": "user", "content": "weather in Oslo"}, {"role": "assistant", "content": r.content}, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tu.id, "content": "cold"}]}])
assert r2.content[0].text; ok.append("tools round trip")
with c.messages.stream(model=m, max_tokens=128, tools=tools, tool_choice={"type": "tool", "name": "get_weather"}, messages=[{"role": "user", "content": "weather in Rome"}]) as st:
    fin = st.get_final_message()
assert [b for b in fin.content if b.type == "tool_use"][0].input["city"]; ok.append("streamed tool_use")
n = c.messages.count_tokens(model=m, messages=[{"role": "user", "content": "count me"}])
assert n.input_tokens > 0; ok.append("count_tokens")
ids = [x.id for x in c.models.list()]; assert m in ids; ok.append("models.list")
long = "You are a helpful assistant. " * 200
cached_system = [{"type": "text", "text": long, "cache_control": {"type": "ephemeral"}}]
a = c.messages.create(model=m, max_tokens=8, system=cached_system, messages=[{"role": "user", "content": "hi"}])
b = c.messages.create(model=m, max_tokens=8, system=cached_system, messages=[{"role": "user", "content": "hi"}])
assert b.usage.cache_read_input_tokens > 0 and b.usage.input_tokens + b.usage.cache_read_input_tokens == a.usage.input_tokens + a.usage.cache_read_input_tokens; ok.append("cache_read + input_tokens = whole prompt")
plain = c.messages.create(model=m, max_tokens=8, system=long, messages=[{"role": "user", "content": "hi"}])
assert plain.usage.cache_read_input_tokens is None and plain.usage.input_tokens == a.usage.input_tokens + a.usage.cache_read_input_tokens; ok.append("no cache_control: no cache accounting")
print("anthropic", anthropic.__version__, "PASS:", ", ".join(ok))
