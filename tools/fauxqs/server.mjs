// Starts the fauxqs SQS emulator (in memory) on 127.0.0.1 only; fauxqs' own
// CLI and startFauxqs() bind 0.0.0.0. Port: FAUXQS_PORT (default 4566, 0 picks
// one). Request logs: FAUXQS_LOGGER=true. Health: GET /health.
// Run with the pinned Node 22: node_modules/.bin/node server.mjs
import { buildApp } from "fauxqs";

const HOST = "127.0.0.1";
const port = Number.parseInt(process.env.FAUXQS_PORT ?? "4566", 10);

// The stores are not exported by name; load them next to fauxqs' entry point
// (the same module instances buildApp uses). fauxqs is pinned in package.json.
const dist = import.meta.resolve("fauxqs");
const { SqsStore } = await import(new URL("./sqs/sqsStore.js", dist));
const { SnsStore } = await import(new URL("./sns/snsStore.js", dist));
const { S3Store } = await import(new URL("./s3/s3Store.js", dist));

// By default queue URLs read http://sqs.REGION.localhost:PORT/...; make them
// http://127.0.0.1:PORT/000000000000/NAME (lookups go by name, so this holds
// for any one region).
const sqsStore = new SqsStore();
sqsStore.host = "";
const buildQueueUrl = sqsStore.buildQueueUrl.bind(sqsStore);
sqsStore.buildQueueUrl = (name, _port, _requestHost, region) =>
  buildQueueUrl(name, "", `${HOST}:${app.server.address().port}`, region);

const app = buildApp({
  logger: process.env.FAUXQS_LOGGER === "true",
  stores: { sqsStore, snsStore: new SnsStore(), s3Store: new S3Store() },
});
const address = await app.listen({ port, host: HOST });
console.log(`fauxqs listening on ${address}`);

let closing = false;
for (const sig of ["SIGINT", "SIGTERM"]) {
  process.on(sig, async () => {
    if (closing) return;
    closing = true;
    console.log(`fauxqs: ${sig}, closing`);
    await app.close();
    process.exit(0);
  });
}
