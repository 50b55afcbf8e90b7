import json, os
from importlib.metadata import version
from langchain_openai import ChatOpenAI, OpenAIEmbeddings
from langchain_core.tools import tool
from langchain_core.messages import HumanMessage, ToolMessage
cfg = json.loads(os.environ["SWITCHYARD_STACK"])
base = cfg["base"] + "/v1"; key = cfg["key"]; ok = []
llm = ChatOpenAI(base_url=base, api_key=key, model=cfg["model"])
r = llm.invoke("hello langchain"); assert r.content and r.usage_metadata["input_tokens"] > 0; ok.append("chat invoke")
chunks = list(llm.stream("stream langchain")); assert "".join(c.content for c in chunks); ok.append("chat stream")
@tool
def get_weather(city: str) -> str:
    """Weather for a city."""
    return "sunny"
bound = llm.bind_tools([get_weather], tool_choice="get_weather")
msgs = [HumanMessage("weather in Lima?")]
ai = bound.invoke(msgs); tc = ai.tool_calls[0]; assert tc["name"] == "get_weather" and tc["args"]["city"]
msgs += [ai, ToolMessage("sunny", tool_call_id=tc["id"])]
fin = llm.bind_tools([get_weather]).invoke(msgs); assert fin.content; ok.append("tools round trip")
rl = ChatOpenAI(base_url=base, api_key=key, model=cfg["model"], use_responses_api=True)
r = rl.invoke("hello responses"); assert r.text; ok.append("Responses API")
rs = list(rl.stream("stream responses")); assert "".join(c.text for c in rs); ok.append("Responses API stream")
from pydantic import BaseModel
class City(BaseModel):
    city: str
so = llm.with_structured_output(City).invoke("name a city"); assert so.city; ok.append("with_structured_output")
emb = OpenAIEmbeddings(base_url=base, api_key=key, model=cfg["embeddingModel"], check_embedding_ctx_length=False)
v = emb.embed_documents(["one doc", "two docs"]); q = emb.embed_query("a query")
assert len(v) == 2 and len(v[0]) == 768 and len(q) == 768; ok.append("OpenAIEmbeddings check_embedding_ctx_length=False")
# The default sends tiktoken cl100k token ids instead of text. It needs tiktoken's cl100k file
# (downloaded, or TIKTOKEN_CACHE_DIR); where it has it, ids outside the served model's vocabulary
# must come back as a 400 naming input[i][j] (the tiny test model has a small vocabulary).
try:
    import tiktoken; tiktoken.get_encoding("cl100k_base")
except Exception:
    default = "default (token ids) not tried: no cl100k file here"
else:
    import openai
    try:
        OpenAIEmbeddings(base_url=base, api_key=key, model=cfg["embeddingModel"]).embed_query("a query about embeddings")
        default = "default (token ids) accepted"
    except openai.BadRequestError as e:
        assert "input[0][" in str(e), e
        default = "default (token ids) rejected as expected: " + str(e)[:90]
print("langchain-openai", version("langchain-openai"), "langchain-core", version("langchain-core"), "PASS:", ", ".join(ok)); print("  " + default)
