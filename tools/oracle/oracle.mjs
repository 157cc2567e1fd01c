// oracle.mjs — llama.cpp (through node-llama-cpp, CPU build) as the reference for
// tiermem-llm's tests. Each line of standard input is one job, "MODEL.gguf<TAB>IDS<TAB>N":
// the prompt's token ids (BOS included, as tiermem-llm -v prints them) are evaluated in
// llama.cpp at f32 KV, and two lines are printed per job:
//   logits L0 L1 ...      the first step's logits, one per vocabulary id
//   ids I1 I2 ...         N greedy tokens (temperature 0)
// (or "error MESSAGE" for a job llama.cpp refuses). One process serves every job: the
// library loads once.
import {getLlama} from "node-llama-cpp";
import * as readline from "node:readline";

const llama = await getLlama({gpu: false, build: "never", logLevel: "error"});

async function runJob(modelPath, ids, n) {
    const model = await llama.loadModel({modelPath, gpuLayers: 0});
    try {
        // f32 KV cache, no flash attention: compared against tiermem-llm --kv-dtype f32.
        const context = await model.createContext({contextSize: Math.max(256, ids.length + n + 8), batchSize: 512,
                                                   threads: 1, flashAttention: false,
                                                   experimentalKvCacheKeyType: "F32",
                                                   experimentalKvCacheValueType: "F32"});
        const seq = context.getSequence();
        const input = ids.map((id, i) => i === ids.length - 1 ? [id, {generateNext: {logits: true}}] : id);
        const res = await seq.controlledEvaluate(input);
        const logitsMap = res[res.length - 1]?.next?.logits;
        if (!logitsMap) throw new Error("llama.cpp returned no logits");
        let maxId = 0;
        for (const id of logitsMap.keys()) maxId = Math.max(maxId, id);
        const logits = new Array(maxId + 1).fill(0);
        for (const [id, v] of logitsMap) logits[id] = v;
        console.log("logits " + logits.map((v) => v.toPrecision(9)).join(" "));
        await seq.clearHistory();
        const out = [];
        for await (const token of seq.evaluate(ids, {temperature: 0})) {
            out.push(token);
            if (out.length >= n) break;
        }
        console.log("ids " + out.join(" "));
        await context.dispose();
    } finally {
        await model.dispose();
    }
}

for await (const line of readline.createInterface({input: process.stdin})) {
    const [modelPath, idsText, nText] = line.split("\t");
    if (!modelPath || !idsText) continue;
    try {
        await runJob(modelPath, idsText.trim().split(/\s+/).map(Number), Number(nText ?? 32));
    } catch (e) {
        console.log("error " + String(e.message ?? e).replace(/\s+/g, " "));
    }
}
