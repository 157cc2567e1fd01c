// The official openai client against tiermem-llm serve: models, a completion, a chat
// answer whole and streamed, and a 400 surfacing as the client's BadRequestError.
// Prints one JSON object of what it saw. URL comes from the environment.
const OpenAI = require('openai');

async function main() {
  const client = new OpenAI({ baseURL: process.env.URL + '/v1', apiKey: 'test-key', maxRetries: 0, timeout: 120000 });
  const out = {};
  const models = await client.models.list();
  out.model = models.data[0].id;
  const c = await client.completions.create({ model: out.model, prompt: 'Once upon a time', max_tokens: 32, temperature: 0 });
  out.completion = c.choices[0].text;
  out.completion_tokens = c.usage.completion_tokens;
  const messages = [{ role: 'user', content: 'Once upon a time' }];
  const chat = await client.chat.completions.create({ model: out.model, messages, max_tokens: 20, temperature: 0 });
  out.chat = chat.choices[0].message.content;
  const stream = await client.chat.completions.create({ model: out.model, messages, max_tokens: 20, temperature: 0, stream: true });
  out.streamed = '';
  out.chunks = 0;
  for await (const chunk of stream) {
    out.streamed += (chunk.choices[0] && chunk.choices[0].delta.content) || '';
    out.chunks++;
  }
  try {
    await client.completions.create({ model: out.model, prompt: 'x', max_tokens: 0 });
    out.bad_request = 'accepted';
  } catch (e) {
    out.bad_request = e instanceof OpenAI.BadRequestError ? e.status + ' ' + e.error.message : String(e);
  }
  console.log(JSON.stringify(out));
}

main().catch((e) => { console.error(String(e)); process.exit(1); });
