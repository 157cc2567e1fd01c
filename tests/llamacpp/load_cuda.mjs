// load_cuda.mjs — llama.cpp's CUDA build (node-llama-cpp's prebuilt backend) loads a model
// with every layer on the GPU, creates a context and evaluates one prompt, saying on
// standard output how far it got, one line per step:
//   gpu NAME free BYTES total BYTES   what node-llama-cpp was told before loading
//   refused NAME: MESSAGE             the load was refused (InsufficientMemoryError)
//   loaded SECONDS                    the whole model is on the device
//   context SIZE                      a context exists
//   evaluated TOKEN                   the prompt ran (a GPU would get here)
// Usage: node load_cuda.mjs MODEL.gguf. ggml aborts the process on a CUDA error while
// computing, so on a driver that cannot run GPU code the last line is "context".
import {getLlama, InsufficientMemoryError} from "node-llama-cpp";

const modelPath = process.argv[2];
if (!modelPath) {
    console.error("usage: node load_cuda.mjs MODEL.gguf");
    process.exit(2);
}
const say = (line) => process.stdout.write(line + "\n");

// "cuda" and build "never": the prebuilt CUDA backend or an error, never the CPU.
const llama = await getLlama({gpu: "cuda", build: "never", logLevel: "warn"});
const vram = await llama.getVramState();
say(`gpu ${llama.gpu} free ${vram.free} total ${vram.total}`);
let model;
try {
    const start = process.hrtime.bigint();
    model = await llama.loadModel({modelPath, gpuLayers: "max"});
    say(`loaded ${(Number(process.hrtime.bigint() - start) / 1e9).toFixed(2)}`);
} catch (e) {
    if (!(e instanceof InsufficientMemoryError)) throw e;
    say(`refused ${e.constructor.name}: ${String(e.message).replace(/\s+/g, " ")}`);
    process.exit(0);
}
const context = await model.createContext({contextSize: 256, batchSize: 64, sequences: 1, flashAttention: false});
say(`context ${context.contextSize}`);
const sequence = context.getSequence();
for await (const token of sequence.evaluate(model.tokenize("once upon a time"), {temperature: 0})) {
    say(`evaluated ${token}`);
    break;
}
await context.dispose();
await model.dispose();
