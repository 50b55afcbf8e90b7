"""LiteLLM proxy in front of Switchyard: writes a config, starts `litellm` on a free port,
calls it with the openai SDK, stops it. Run with the venv that has litellm[proxy] and openai."""
import json, os, socket, subprocess, sys, tempfile, time, urllib.request
from importlib.metadata import version
from openai import OpenAI
cfg = json.loads(os.environ["SWITCHYARD_STACK"])
base = cfg["base"] + "/v1"
config = f"""model_list:
  - model_name: {cfg["model"]}
    litellm_params: {{ model: openai/{cfg["model"]}, api_base: {base}, api_key: os.environ/SWITCHYARD_API_KEY }}
  - model_name: {cfg["embeddingModel"]}
    litellm_params: {{ model: openai/{cfg["embeddingModel"]}, api_base: {base}, api_key: os.environ/SWITCHYARD_API_KEY }}
"""
path = tempfile.mktemp(suffix=".yaml"); open(path, "w").write(config)
s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
master = "sk-local-proxy-key-0123456789abcdef"
env = {**os.environ, "SWITCHYARD_API_KEY": cfg["key"], "LITELLM_MASTER_KEY": master, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
litellm_bin = os.path.join(os.path.dirname(sys.executable), "litellm")
proxy = subprocess.Popen([litellm_bin, "--config", path, "--host", "127.0.0.1", "--port", str(port)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
try:
    for _ in range(120):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health/liveliness", timeout=1); break
        except Exception:
            time.sleep(0.5)
    c = OpenAI(base_url=f"http://127.0.0.1:{port}", api_key=master); ok = []
    r = c.chat.completions.create(model=cfg["model"], messages=[{"role": "user", "content": "via proxy"}]); assert r.choices[0].message.content; ok.append("chat")
    t = "".join((x.choices[0].delta.content or "") for x in c.chat.completions.create(model=cfg["model"], messages=[{"role": "user", "content": "via proxy stream"}], stream=True) if x.choices); assert t; ok.append("chat stream")
    e = c.embeddings.create(model=cfg["embeddingModel"], input=["q"]); assert len(e.data[0].embedding) == 768; ok.append("embeddings")
    print("litellm proxy", version("litellm"), "PASS:", ", ".join(ok))
finally:
    proxy.terminate(); proxy.wait(10); os.unlink(path)
