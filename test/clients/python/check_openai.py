import json, os
from openai import OpenAI
cfg = json.loads(os.environ["SWITCHYARD_STACK"])
c = OpenAI(base_url=cfg["base"] + "/v1", api_key=cfg["key"])
m = cfg["model"]
ok = []
r = c.chat.completions.create(model=m, messages=[{"role": "user", "content": "hello there"}], max_tokens=20)
assert r.choices[0].message.content and r.usage.prompt_tokens > 0; ok.append("chat")
s = c.chat.completions.create(model=m, messages=[{"role": "user", "content": "hello stream"}], stream=True, stream_options={"include_usage": True})
txt = ""; usage = None
for ch in s:
    if ch.choices and ch.choices[0].delta.content: txt += ch.choices[0].delta.content
    if ch.usage: usage = ch.usage
assert txt and usage and usage.completion_tokens > 0; ok.append("chat stream")
tools = [{"type": "function", "function": {"name": "get_weather", "description": "w", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
r = c.chat.completions.create(model=m, messages=[{"role": "user", "content": "weather in Tokyo?"}], tools=tools, tool_choice="required")
tc = r.choices[0].message.tool_calls[0]; assert tc.function.name == "get_weather" and json.loads(tc.function.arguments)["city"]
r2 = c.chat.completions.create(model=m, messages=[{"role": "user", "content": "weather in Tokyo?"}, r.choices[0].message, {"role": "tool", "tool_call_id": tc.id, "content": "sunny"}], tools=tools)
assert r2.choices[0].message.content; ok.append("chat tools round trip")
r = c.chat.completions.parse(model=m, messages=[{"role": "user", "content": "give a city"}], response_format={"type": "json_schema", "json_schema": {"name": "c", "strict": True, "schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": False}}})
assert json.loads(r.choices[0].message.content)["city"]; ok.append("json_schema")
r = c.responses.create(model=m, input="hello responses", max_output_tokens=32)
assert r.output_text and r.usage.input_tokens > 0; ok.append("responses")
r2 = c.responses.create(model=m, input="and again", previous_response_id=r.id)
assert r2.output_text; ok.append("responses previous_response_id")
got = c.responses.retrieve(r.id); assert got.id == r.id; ok.append("responses retrieve")
with c.responses.stream(model=m, input="stream me") as st:
    for ev in st: pass
    final = st.get_final_response()
assert final.output_text; ok.append("responses stream")
rt = c.responses.create(model=m, input="weather in Paris?", tools=[{"type": "function", "name": "get_weather", "parameters": tools[0]["function"]["parameters"]}], tool_choice="required")
fc = [o for o in rt.output if o.type == "function_call"][0]
rt2 = c.responses.create(model=m, previous_response_id=rt.id, input=[{"type": "function_call_output", "call_id": fc.call_id, "output": "rainy"}])
assert rt2.output_text; ok.append("responses tools round trip")
e = c.embeddings.create(model=cfg["embeddingModel"], input=["a", "b c"])
assert len(e.data) == 2 and len(e.data[0].embedding) == 768; ok.append("embeddings (base64 default)")
ms = [x.id for x in c.models.list()]; assert m in ms; ok.append("models.list")
import openai
print("openai", openai.__version__, "PASS:", ", ".join(ok))
