#!/usr/bin/env node
// Checked in (not built) so npm links it at install time, before the first build.
import "../dist/bin.js";
