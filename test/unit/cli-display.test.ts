// Terminal display: `show` sections (cmd_test.go TestShowInfo), progress lines and the streamed
// answer (word wrap, thinking block).
import { terminalSafe } from "../../src/cli/terminal-text.js";
import { describe, expect, it } from "vitest";
import { Bar, fitLine, formatEta, Progress, Spinner } from "../../src/cli/progress.js";
import { ResponseWriter, WrapWriter } from "../../src/cli/response-writer.js";
import { formatShowInfo, type ShowInfo } from "../../src/cli/show-info.js";
import type { ModelDetails } from "../../src/api/types.js";

const details: ModelDetails = {
  parent_model: "",
  format: "gguf",
  family: "test",
  families: null,
  parameter_size: "7B",
  quantization_level: "FP16",
};

describe("show output (cmd_test.go TestShowInfo)", () => {
  const base = { details, modelfile: "", modified_at: "", capabilities: [] } as unknown as ShowInfo;

  it("bare details", () => {
    const resp = { ...base, model_info: undefined } as unknown as ShowInfo;
    expect(formatShowInfo(resp, false)).toBe(
      "  Model\n    architecture    test    \n    parameters      7B      \n    quantization    FP16    \n\n",
    );
  });

  it("bare model info", () => {
    const resp: ShowInfo = {
      ...base,
      model_info: {
        "general.architecture": "test",
        "general.parameter_count": 7_000_000_000,
        "test.context_length": 0,
        "test.embedding_length": 0,
      },
    };
    expect(formatShowInfo(resp, false)).toBe(
      "  Model\n" +
        "    architecture        test    \n" +
        "    parameters          7B      \n" +
        "    context length      0       \n" +
        "    embedding length    0       \n" +
        "    quantization        FP16    \n" +
        "\n",
    );
  });

  it("verbose model", () => {
    const resp: ShowInfo = {
      ...base,
      details: { ...details, parameter_size: "8B" },
      parameters: "\n\t\t\tstop up",
      model_info: {
        "general.architecture": "test",
        "general.parameter_count": 8_000_000_000,
        "some.true_bool": true,
        "some.false_bool": false,
        "test.context_length": 1000,
        "test.embedding_length": 11434,
      },
      tensors: [
        { name: "blk.0.attn_k.weight", type: "BF16", shape: [42, 3117] },
        { name: "blk.0.attn_q.weight", type: "FP16", shape: [3117, 42] },
      ],
    };
    expect(formatShowInfo(resp, true)).toBe(`  Model
    architecture        test     
    parameters          8B       
    context length      1000     
    embedding length    11434    
    quantization        FP16     

  Parameters
    stop    up    

  Metadata
    general.architecture       test     
    general.parameter_count    8e+09    
    some.false_bool            false    
    some.true_bool             true     
    test.context_length        1000     
    test.embedding_length      11434    

  Tensors
    blk.0.attn_k.weight    BF16    [42 3117]    
    blk.0.attn_q.weight    FP16    [3117 42]    

`);
  });

  it("parameters", () => {
    const resp = {
      ...base,
      model_info: undefined,
      parameters: "\n\t\t\tstop never\n\t\t\tstop gonna\n\t\t\tstop give\n\t\t\tstop you\n\t\t\tstop up\n\t\t\ttemperature 99",
    } as unknown as ShowInfo;
    expect(formatShowInfo(resp, false)).toBe(`  Model
    architecture    test    
    parameters      7B      
    quantization    FP16    

  Parameters
    stop           never    
    stop           gonna    
    stop           give     
    stop           you      
    stop           up       
    temperature    99       

`);
  });

  it("projector info", () => {
    const resp = {
      ...base,
      model_info: undefined,
      projector_info: {
        "general.architecture": "clip",
        "general.parameter_count": 133_700_000,
        "clip.vision.embedding_length": 0,
        "clip.vision.projection_dim": 0,
      },
    } as unknown as ShowInfo;
    expect(formatShowInfo(resp, false)).toBe(`  Model
    architecture    test    
    parameters      7B      
    quantization    FP16    

  Projector
    architecture        clip       
    parameters          133.70M    
    embedding length    0          
    dimensions          0          

`);
  });

  it("system and license show two lines then ...", () => {
    const resp = {
      ...base,
      model_info: undefined,
      system: "You are a pirate!\nAhoy, matey!\nWeigh anchor!\n\t\t\t",
      license: "MIT License\nCopyright (c) Ollama\n",
    } as unknown as ShowInfo;
    expect(formatShowInfo(resp, false)).toBe(`  Model
    architecture    test    
    parameters      7B      
    quantization    FP16    

  System
    You are a pirate!    
    Ahoy, matey!         
    ...                  

  License
    MIT License             
    Copyright (c) Ollama    

`);
  });

  it("capabilities", () => {
    const resp = { ...base, model_info: undefined, capabilities: ["vision", "tools"] } as unknown as ShowInfo;
    expect(formatShowInfo(resp, false)).toBe(
      "  Model\n" +
        "    architecture    test    \n" +
        "    parameters      7B      \n" +
        "    quantization    FP16    \n" +
        "\n" +
        "  Capabilities\n" +
        "    vision    \n" +
        "    tools     \n" +
        "\n",
    );
  });

  it("shortens long metadata arrays", () => {
    const resp: ShowInfo = { ...base, model_info: { "tokenizer.ggml.tokens": ["a", "bb", "ccc", "dddd"] } };
    expect(formatShowInfo(resp, true)).toContain("    tokenizer.ggml.tokens    [a bb ...+2 more]    \n");
  });
});

describe("progress", () => {
  class Sink {
    text = "";
    isTTY = false;
    columns = 80;
    write(s: string) {
      this.text += s;
      return true;
    }
  }

  it("prints each line once, in its final form, when stderr is not a terminal", () => {
    const sink = new Sink();
    const p = new Progress(sink as unknown as NodeJS.WritableStream, { tty: false });
    const a = new Spinner("copying file sha256:abc 0%");
    p.add(a);
    a.setMessage("copying file sha256:abc 100%");
    a.stop();
    p.add(new Spinner("writing manifest"));
    expect(sink.text).toBe("copying file sha256:abc 100%\n");
    p.add(new Spinner("success"));
    p.stop();
    expect(sink.text).toBe("copying file sha256:abc 100%\nwriting manifest\nsuccess\n");
    expect(p.stop()).toBe(false);
  });

  it("prints nothing for a cleared progress off a terminal", () => {
    const sink = new Sink();
    const p = new Progress(sink as unknown as NodeJS.WritableStream, { tty: false });
    p.add(new Spinner(""));
    p.stopAndClear();
    expect(sink.text).toBe("");
  });

  it("draws a finished bar with the total only", () => {
    const bar = new Bar("pulling 0123456789ab:", 2_000_000_000, 2_000_000_000);
    const line = bar.render(80);
    expect(line.startsWith("pulling 0123456789ab: 100% ▕")).toBe(true);
    expect(line.endsWith("▏   2 GB" + " ".repeat(25))).toBe(true);
    expect(line.length).toBe(79);
  });

  it("fits a bar to the terminal: drops the ETA, then the rate, then the bar, then shortens the label", () => {
    const bar = new Bar("pulling 0123456789ab:", 4_700_000_000, 0);
    bar.set(1_200_000_000);
    // a rate: two buckets a second apart
    (bar as unknown as { buckets: { updated: number; value: number }[] }).buckets.unshift({ updated: Date.now() - 2000, value: 0 });
    const at = (w: number) => bar.render(w);
    expect(at(120)).toMatch(/^pulling 0123456789ab:  26% ▕█+ +▏ 1\.2 GB\/4\.7 GB +\d+ MB\/s +\S+$/);
    expect(at(120).length).toBe(119);
    expect(at(66)).toMatch(/▏ 1\.2 GB\/4\.7 GB +\d+ MB\/s$/); // no ETA
    expect(at(56)).toMatch(/▏ 1\.2 GB\/4\.7 GB$/); // no rate
    expect(at(41)).toBe("pulling 0123456789ab:  26% 1.2 GB/4.7 GB"); // no bar
    expect(at(30)).toBe("pulling 0…  26% 1.2 GB/4.7 GB");
    for (let w = 10; w <= 200; w++) expect(displayWidthOf(at(w)), `width ${w}`).toBeLessThan(w);
  });

  it("shortens a spinner's message to the width, keeping the frame", () => {
    const s = new Spinner("using existing layer sha256:" + "a".repeat(64));
    const line = s.render(40);
    expect(line.length).toBe(39);
    expect(line).toMatch(/^using existing layer sha256:a+… [⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] $/);
    expect(fitLine("abc", "12345", 4)).toBe("abc1"); // not even the tail fits: the start, cut
  });

  it("moves up over the rows the last drawing takes now, wrapped lines included", () => {
    class TtySink {
      text = "";
      isTTY = true;
      columns = 80;
      rows = 24;
      write(s: string) {
        this.text += s;
        return true;
      }
    }
    const sink = new TtySink();
    const p = new Progress(sink as unknown as NodeJS.WritableStream, { tty: true });
    p.add(new Spinner("pulling manifest"));
    const bar = new Bar("pulling 0123456789ab:", 100, 0);
    p.add(bar);
    (p as unknown as { render(): void }).render();
    // the terminal shrinks to 30 columns and reflows the 79-column bar line onto 3 rows
    sink.columns = 30;
    sink.text = "";
    (p as unknown as { render(): void }).render();
    expect(sink.text).toContain("\x1b[3A"); // 1 row + 3 rows, less the one the cursor is on
    p.stopAndClear();
  });

  it("formats ETAs with two units at most", () => {
    expect(formatEta(3599)).toBe("59m59s");
    expect(formatEta(3720)).toBe("1h2m");
    expect(formatEta(400 * 3600)).toBe("99h+");
    expect(formatEta(5)).toBe("5s");
  });
});

function displayWidthOf(s: string): number {
  return [...s].length;
}

describe("response display", () => {
  it("wraps at width − 5, moving the partial word to the next line", () => {
    let out = "";
    const w = new WrapWriter((s) => (out += s), () => 20);
    w.display("hello world again and", true);
    // the line breaks when it would pass 15 columns; "again" had started and is moved down
    expect(out).toBe("hello world aga\x1b[3D\x1b[K\nagain and");
  });

  it("passes text through without word wrap", () => {
    let out = "";
    new WrapWriter((s) => (out += s), () => 20).display("hello world again and", false);
    expect(out).toBe("hello world again and");
  });

  it("frames thinking in plain text mode and collects the answer", () => {
    let out = "";
    const rw = new ResponseWriter((s) => (out += s), () => 80, { wordWrap: false, hideThinking: false, plain: true, toolCallsFirst: false });
    rw.push({ content: "", thinking: "Let me think" });
    rw.push({ content: "Answer." });
    expect(out).toBe("Thinking...\nLet me think\n...done thinking.\n\nAnswer.");
    expect(rw.thinking).toBe("Let me think");
    expect(rw.content).toBe("Answer.");
  });

  it("hides thinking on request", () => {
    let out = "";
    const rw = new ResponseWriter((s) => (out += s), () => 80, { wordWrap: false, hideThinking: true, plain: true, toolCallsFirst: false });
    expect(rw.visible({ content: "", thinking: "x" })).toBe(false);
    rw.push({ content: "", thinking: "x" });
    rw.push({ content: "ok" });
    expect(out).toBe("ok");
  });
});

describe("model output on a terminal", () => {
  it("shows control characters in caret notation, keeps what the model said in the history", () => {
    expect(terminalSafe("a\x1b[2Jb\x07c\td\ne")).toBe("a^[[2Jb^Gc\td\ne");
    expect(terminalSafe("line\r\nnext\r")).toBe("line\nnext");
    expect(terminalSafe("del\x7f c1\x9b")).toBe("del^? c1\ufffd");
    expect(terminalSafe("plain text, ünïcode ✓")).toBe("plain text, ünïcode ✓");
    let out = "";
    const w = new ResponseWriter((s) => void (out += s), () => 80, { wordWrap: false, hideThinking: false, plain: false, toolCallsFirst: true });
    w.push({ content: "hi\x1b]0;pwned\x07!" });
    expect(out).toBe("hi^[]0;pwned^G!");
    expect(w.content).toBe("hi\x1b]0;pwned\x07!");
    let piped = "";
    new ResponseWriter((s) => void (piped += s), () => 80, { wordWrap: false, hideThinking: false, plain: true, toolCallsFirst: true }).push({ content: "x\x1b[1my" });
    expect(piped).toBe("x\x1b[1my");
  });
});
