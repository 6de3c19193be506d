// Smoke test of a running fauxqs through @aws-sdk/client-sqs: create a queue,
// send a message with an event_id attribute, receive it, let the visibility
// timeout lapse, receive it again with ApproximateReceiveCount 2, delete it.
// Endpoint: SQS_ENDPOINT (default http://127.0.0.1:4566). Exits 1 on failure.
// Run with the pinned Node 22: node_modules/.bin/node smoke.mjs
import {
  SQSClient, CreateQueueCommand, SendMessageCommand, ReceiveMessageCommand,
  DeleteMessageCommand, DeleteQueueCommand,
} from "@aws-sdk/client-sqs";

const endpoint = process.env.SQS_ENDPOINT ?? "http://127.0.0.1:4566";
const sqs = new SQSClient({
  endpoint,
  region: "us-east-1",
  credentials: { accessKeyId: "test", secretAccessKey: "test" },
});
const deadline = setTimeout(() => { console.error("FAIL: timed out after 30s"); process.exit(1); }, 30_000);
const check = (ok, what) => { if (!ok) throw new Error(what); console.log(`ok   ${what}`); };

const receive = (QueueUrl, WaitTimeSeconds) => sqs.send(new ReceiveMessageCommand({
  QueueUrl, WaitTimeSeconds, MaxNumberOfMessages: 10,
  MessageAttributeNames: ["All"], MessageSystemAttributeNames: ["ApproximateReceiveCount"],
})).then((r) => r.Messages ?? []);

let queueUrl;
try {
  const name = `smoke-${process.pid}-${Date.now()}`;
  ({ QueueUrl: queueUrl } = await sqs.send(new CreateQueueCommand({
    QueueName: name, Attributes: { VisibilityTimeout: "1" },
  })));
  check(queueUrl === `${new URL(endpoint).origin}/000000000000/${name}`, `queue URL ${queueUrl}`);

  const { MessageId } = await sqs.send(new SendMessageCommand({
    QueueUrl: queueUrl, MessageBody: "hello",
    MessageAttributes: { event_id: { DataType: "String", StringValue: "e1" } },
  }));
  check(!!MessageId, `sent ${MessageId}`);

  let msgs = await receive(queueUrl, 2);
  check(msgs.length === 1 && msgs[0].MessageId === MessageId && msgs[0].Body === "hello", "received once");
  check(msgs[0].MessageAttributes?.event_id?.StringValue === "e1", "event_id attribute = e1");
  check(msgs[0].Attributes?.ApproximateReceiveCount === "1", "ApproximateReceiveCount = 1");
  check((await receive(queueUrl, 0)).length === 0, "invisible while in flight");

  const t0 = Date.now();
  msgs = await receive(queueUrl, 5); // not deleted: back after the 1 s visibility timeout
  check(msgs.length === 1 && msgs[0].MessageId === MessageId, `redelivered after ${Date.now() - t0} ms`);
  check(msgs[0].Attributes?.ApproximateReceiveCount === "2", "ApproximateReceiveCount = 2");

  await sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: msgs[0].ReceiptHandle }));
  await new Promise((r) => setTimeout(r, 1200));
  check((await receive(queueUrl, 0)).length === 0, "gone after delete");
  console.log("smoke: PASS");
} catch (err) {
  console.error(`FAIL: ${err.message ?? err}`);
  process.exitCode = 1;
} finally {
  if (queueUrl) await sqs.send(new DeleteQueueCommand({ QueueUrl: queueUrl })).catch(() => {});
  clearTimeout(deadline);
}
