#!/usr/bin/env node
import { main } from './main.js';

const code = await main(process.argv);
// The demo node keeps running until it is told to stop; every other command ends here.
if (!(process.argv[2] === 'demo-node' && code === 0)) process.exit(code);
