/**
 * Local (in-process) model engines by public model id. A model is live while its engine is
 * registered; engines register themselves once their weights are loaded.
 */
export interface LocalEngine {
  readonly modelId: string;
  /** Human-readable summary for start-up logs (files, input names, provider). */
  describe(): Record<string, unknown>;
  close(): Promise<void>;
}

export class EngineRegistry {
  private readonly engines = new Map<string, LocalEngine>();
  /** Set by closeAll (server shutdown): engines still loading must close themselves, not register. */
  closed = false;

  register(engine: LocalEngine): void {
    this.engines.set(engine.modelId, engine);
  }

  unregister(modelId: string): void {
    this.engines.delete(modelId);
  }

  get<E extends LocalEngine>(modelId: string): E | undefined {
    return this.engines.get(modelId) as E | undefined;
  }

  isLoaded(modelId: string): boolean {
    return this.engines.has(modelId);
  }

  async closeAll(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.engines.values()].map((e) => e.close()));
    this.engines.clear();
  }
}
