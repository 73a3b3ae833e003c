/* Building a model from a config file: the strict parser's semantic half.
 * Building is where the config's semantics are checked: known sections and
 * keys, value ranges, references to earlier layers only, shapes (through each
 * layer's infer), every output used, a loss last. The format is
 * docs/config-format.md. */
#ifndef REMAT_MODELS_BUILDER_H
#define REMAT_MODELS_BUILDER_H

#include "config.h"
#include "model.h"
#include "onnx.h"

/* Loads and checks a config file. Every error is RM_ERR_IO, RM_ERR_PARSE or
 * RM_ERR_SHAPE with a message "path:line: what". */
int rm_model_load(rm_model **out, const char *path, rm_err *e);
/* The same with the input's height and width replaced (0 keeps the
 * config's): one config serves every input size (U-Net at 416x608, as
 * Checkmate measures it). Errors at the size (a shape that no longer
 * divides) name the config's lines, as without the override. */
int rm_model_load_input(rm_model **out, const char *path, int height, int width, rm_err *e);
/* The one loader of a command's model: a config file, or, when onnx is not
 * NULL, an ONNX file imported with those options (models/onnx.h; sum, which
 * may be NULL, then says what the import did). height and width > 0 replace
 * the input's size, as rm_model_load_input does. */
int rm_model_open(rm_model **out, const char *path, const rm_onnx_options *onnx, int height, int width,
                  rm_onnx_summary *sum, rm_err *e);
/* The same from text in memory (tests); path is used in messages only. */
int rm_model_parse(rm_model **out, const char *text, const char *path, rm_err *e);
/* The same from an already tokenized file. */
int rm_model_build(rm_model **out, const rm_cfg_file *f, rm_err *e);

#endif
