#!/usr/bin/env node
import { main } from './main.js';

// `rollcall watch --json | head -1`: a reader that went away ends the command quietly.
for (const stream of [process.stdout, process.stderr]) stream.on('error', (err: NodeJS.ErrnoException) => process.exit(err.code === 'EPIPE' ? 0 : 1));

const code = await main(process.argv);
// The demo node keeps running until it is told to stop; every other command ends here.
if (!(process.argv[2] === 'demo-node' && code === 0)) process.exit(code);
