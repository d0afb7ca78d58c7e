// Records are stored as the JSON text the SQL store writes; SQLite keeps it in a TEXT column as is.
export { decodeRecord, encodeRecord, type Decoded } from '@rollcall/sql';
