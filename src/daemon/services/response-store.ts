// The Responses API's stored responses (OpenAI stores a response unless the request says
// `store: false`): each finished response with the conversation it ended (every input item,
// earlier responses' included, then its own output items), so that a later request can go on from
// it with `previous_response_id` or name its items with `item_reference`, which is how the AI SDK
// and the openai client send earlier turns by default. Kept in memory only, newest last, within a
// count and a byte budget: the oldest go first, and a lost one is a 404 that says to send the
// conversation instead. Ollama stores nothing; it refuses both.

type Obj = Record<string, unknown>;

export interface StoredResponse {
  /** The response object as it was answered. */
  response: Obj;
  /** The request's input items, references resolved (GET …/input_items). */
  input: Obj[];
  /** Everything the conversation holds after this response: earlier turns, this input, this output. */
  conversation: Obj[];
}

interface Entry extends StoredResponse {
  bytes: number;
}

export class ResponseStore {
  private readonly entries = new Map<string, Entry>();
  /** Item id → the response whose conversation holds it (the newest one). */
  private readonly items = new Map<string, string>();
  private bytes = 0;

  constructor(
    private readonly maxResponses = 1024,
    private readonly maxBytes = 64 << 20,
  ) {}

  save(id: string, stored: StoredResponse): void {
    this.delete(id);
    // The size of what is kept, as JSON (the strings dominate); one that alone exceeds the budget is not kept.
    const bytes = JSON.stringify(stored).length * 2;
    if (bytes > this.maxBytes) return;
    this.entries.set(id, { ...stored, bytes });
    this.bytes += bytes;
    for (const item of stored.conversation) if (typeof item.id === "string") this.items.set(item.id, id);
    while (this.entries.size > this.maxResponses || this.bytes > this.maxBytes) {
      const oldest = this.entries.keys().next().value as string;
      this.delete(oldest);
    }
  }

  get(id: string): StoredResponse | undefined {
    return this.entries.get(id);
  }

  /** A stored item by its id (a message, function call, function call output or reasoning item). */
  item(id: string): Obj | undefined {
    const owner = this.items.get(id);
    if (owner !== undefined) return this.entries.get(owner)?.conversation.find((i) => i.id === id);
    // Its newest holder was dropped: an older response may hold it too (a conversation repeats
    // the turns before it). Found there, it is indexed again.
    for (const [rid, e] of [...this.entries].reverse()) {
      const found = e.conversation.find((i) => i.id === id);
      if (found) {
        this.items.set(id, rid);
        return found;
      }
    }
    return undefined;
  }

  delete(id: string): boolean {
    const e = this.entries.get(id);
    if (!e) return false;
    this.entries.delete(id);
    this.bytes -= e.bytes;
    for (const item of e.conversation) if (typeof item.id === "string" && this.items.get(item.id) === id) this.items.delete(item.id);
    return true;
  }
}
