// Records are stored as the JSON text the SQL store writes, in a utf8mb4 MEDIUMTEXT column.
export { decodeRecord, encodeRecord, type Decoded } from '@rollcall/sql';
