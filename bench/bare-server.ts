import Fastify from 'fastify';

/** The baseline of the auth benchmark: the same Fastify, one route, no work. */
const app = Fastify({ logger: false });
app.get('/bare', async () => ({ ok: true }));
await app.listen({ port: Number(process.env.PORT ?? 3999), host: '127.0.0.1' });
console.log('bare server listening');
